"""The `iac` analyzer's checks (p4review.review.analyzers.iac_checks) on compose files and Terraform."""

from __future__ import annotations

import pytest

from p4review.models.finding_labels import Category, Severity
from p4review.review.analyzers import iac_checks

COMPOSE = """services:
  app:
    image: app:1
    privileged: true
    user: "0"
    network_mode: host
    cap_add:
      - NET_BIND_SERVICE
      - SYS_ADMIN
    security_opt: ["seccomp:unconfined"]
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock:ro
      - ./data:/data
      - type: bind
        source: /var/run/docker.sock
        target: /var/run/docker.sock
    environment:
      - DOCKER_HOST=unix:///var/run/docker.sock
  db:
    image: postgres:16
    pid: host
    ipc: host
    ports:
      - "5432:5432"
      - "127.0.0.1:6379:6379"
      - 8080:80
      - "2375:2375"
volumes:
  db_data:
"""


def _found(path, text):
    return [(r.line, r.rule) for r in iac_checks.check(path, text)]


@pytest.mark.spec("RV-7")
def test_compose_settings_that_break_container_isolation_are_reported_on_their_lines():
    assert _found("//d/deploy/docker-compose.yml", COMPOSE) == [
        (4, "IAC-compose-privileged"),
        (5, "IAC-compose-root-user"),
        (6, "IAC-compose-host-network"),
        (9, "IAC-compose-dangerous-capability"),
        (10, "IAC-compose-unconfined"),
        (12, "IAC-compose-docker-socket"),
        (15, "IAC-compose-docker-socket"),  # the long volume syntax
        (21, "IAC-compose-host-pid"),
        (22, "IAC-compose-host-ipc"),
        (24, "IAC-compose-public-db-port"),  # 127.0.0.1:6379 and 8080:80 are fine
        (27, "IAC-compose-public-db-port"),
    ]
    reports = {r.line: r for r in iac_checks.check("//d/compose.yaml", COMPOSE)}
    assert reports[4].severity is Severity.HIGH and reports[4].category is Category.SECURITY
    assert reports[24].severity is Severity.MEDIUM and "PostgreSQL" in reports[24].message
    assert reports[27].severity is Severity.HIGH  # the Docker daemon's API
    assert "CKV_K8S_16" in reports[4].message and reports[4].rule_id == "iac/IAC-compose-privileged"


def test_an_ordinary_compose_file_gives_nothing():
    text = (
        "services:\n  web:\n    build: .\n    user: app\n    ports:\n      - '8000:5000'\n    cap_drop: [ALL]\n"
        "    cap_add:\n      - NET_BIND_SERVICE\n  redis:\n    image: redis:alpine\n    expose: ['6379']\n"
        "    network_mode: service:web\n"
    )
    assert _found("//d/compose.yml", text) == []


TERRAFORM = """variable "open" {
  default = false   # a variable's default is not a resource setting
}

resource "aws_security_group" "web" {
  name = "web-${var.env}"   # a comment with a { brace
  ingress {
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = [
      "0.0.0.0/0",
    ]
  }
  ingress {
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
  ingress {
    from_port        = 8080
    to_port          = 8080
    protocol         = "tcp"
    ipv6_cidr_blocks = ["::/0"]
  }
  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_security_group_rule" "all" {
  type        = "ingress"
  from_port   = 0
  to_port     = 0
  protocol    = "-1"
  cidr_blocks = ["0.0.0.0/0"]
}

resource "aws_instance" "i" {
  user_data = <<-EOT
    #!/bin/bash
    echo "{ not = hcl" > /tmp/x
  EOT
  metadata_options {
    http_tokens = "optional"
  }
  root_block_device {
    encrypted = false
  }
}

resource "aws_iam_policy" "admin" {
  policy = <<POLICY
{
  "Statement": [
    {
      "Effect": "Allow",
      "Action": "*",
      "Resource": "*"
    },
    {
      "Effect": "Deny",
      "Action": "*",
      "Resource": "*"
    }
  ]
}
POLICY
}

resource "aws_iam_role_policy" "star" {
  policy = jsonencode({
    Statement = [{ Effect = "Allow", Action = ["*"], Resource = ["arn:aws:s3:::b/*"] }]
  })
}

data "aws_iam_policy_document" "doc" {
  statement {
    actions   = ["*"]
    resources = ["*"]
  }
}

resource "aws_s3_bucket_acl" "b" {
  bucket = aws_s3_bucket.b.id
  acl    = "public-read"
}

resource "aws_s3_bucket_public_access_block" "b" {
  bucket            = aws_s3_bucket.b.id
  block_public_acls = false
}

resource "aws_db_instance" "db" {
  storage_encrypted   = false
  publicly_accessible = var.public
  deletion_protection = false
  skip_final_snapshot = true
}

resource "aws_kms_key" "signing" {
  customer_master_key_spec = "ECC_NIST_P256"
  enable_key_rotation      = false
}

resource "aws_kms_key" "data" {
  enable_key_rotation = false
}

resource "azurerm_storage_account" "s" {
  min_tls_version = "TLS1_0"
}

resource "azurerm_mysql_server" "m" {
  ssl_enforcement_enabled = false
}

resource "google_storage_bucket_iam_member" "public" {
  member = "allUsers"
}

resource "google_compute_firewall" "ssh" {
  source_ranges = ["0.0.0.0/0"]
  allow {
    protocol = "tcp"
    ports    = ["22", "80"]
  }
}

provider "vault" {
  skip_tls_verify = true
}
"""


@pytest.mark.spec("RV-7")
def test_terraform_settings_are_reported_on_their_attributes():
    assert _found("//d/infra/main.tf", TERRAFORM) == [
        (8, "IAC-tf-open-admin-ingress"),  # 443 from anywhere is a public web port: not reported
        (22, "IAC-tf-open-ingress"),
        (37, "IAC-tf-open-admin-ingress"),  # all ports
        (49, "IAC-tf-imdsv1"),
        (52, "IAC-tf-unencrypted-storage"),
        (62, "IAC-tf-iam-admin"),  # the Deny statement is not
        (77, "IAC-tf-iam-star-action"),
        (83, "IAC-tf-iam-admin"),
        (90, "IAC-tf-s3-public-acl"),
        (95, "IAC-tf-s3-public-access-block-off"),
        (99, "IAC-tf-unencrypted-storage"),  # publicly_accessible from a variable: not guessed
        (101, "IAC-tf-deletion-protection-off"),
        (102, "IAC-tf-skip-final-snapshot"),
        (111, "IAC-tf-kms-rotation-off"),  # the asymmetric key cannot rotate
        (115, "IAC-tf-old-tls"),
        (119, "IAC-tf-transport-not-enforced"),
        (123, "IAC-tf-public-member"),
        (127, "IAC-tf-open-admin-ingress"),
        (135, "IAC-tf-tls-verify-off"),
    ]


def test_a_report_spans_the_attributes_that_make_the_problem():
    reports = {r.line: r for r in iac_checks.check("//d/main.tf", TERRAFORM)}
    assert (reports[8].line, reports[8].end_line) == (8, 12)  # from_port .. the multi-line cidr list
    assert reports[8].severity is Severity.HIGH and "CKV_AWS_24" in reports[8].message
    assert (reports[62].line, reports[62].end_line) == (62, 63)  # Action .. Resource
    assert reports[101].category is Category.RELIABILITY and reports[101].severity is Severity.LOW


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize(
    "text",
    [
        'resource "aws_s3_bucket" "b" {\n  acl = "public-read"\n}\n}\n}\nresource {\n',
        'resource "x" "y" {\n  a = [\n  b = "unterminated\n',
        'policy = <<EOF\n{ "Action": "*"\n',
        '}}}]]])))"""',
        "",
    ],
)
def test_broken_terraform_never_raises(text):
    iac_checks.check("//d/broken.tf", text)


def test_only_compose_files_and_terraform_are_checked():
    assert iac_checks.check("//d/config/app.yml", COMPOSE) == []
    assert iac_checks.check("//d/main.tf.json", TERRAFORM) == []
    assert _found("//d/ops/docker-compose.prod.yaml", "services:\n  a:\n    privileged: true\n") == [
        (3, "IAC-compose-privileged")
    ]


def test_every_rule_says_why_and_what_to_do_and_names_checkov_where_it_has_one():
    for rule, spec in iac_checks.RULES.items():
        assert rule.startswith(("IAC-compose-", "IAC-tf-")) and spec.why.endswith(".")
        assert spec.checkov.startswith("CKV_") or rule in {
            "IAC-compose-public-db-port",
            "IAC-tf-skip-final-snapshot",
            "IAC-tf-force-destroy",
        }
    assert 15 <= len(iac_checks.RULES) <= 30


def test_unparseable_terraform_is_read_block_by_block():
    text = (
        'resource "aws_s3_bucket" "b" {\n  acl = "public-read"\n}\n}\n'  # a stray brace after the block
        'resource "aws_db_instance" "x" {\n  storage_encrypted = false\n  name = "unterminated\n}\n'
        'resource "aws_db_instance" "y" {\n  publicly_accessible = true\n}\n'
    )
    assert _found("//d/broken.tf", text) == [(2, "IAC-tf-s3-public-acl"), (10, "IAC-tf-publicly-accessible")]


def test_a_compose_file_is_read_up_to_its_first_yaml_error_and_text_blocks_are_not_settings():
    text = "services:\n  a:\n    privileged: true\n\tpid: host\n"  # a tab: not YAML from line 4 on
    assert _found("//d/compose.yml", text) == [(3, "IAC-compose-privileged")]
    text = "services:\n  a:\n    command: |\n      user: root\n    ports: ['5432:5432']\n"
    assert _found("//d/compose.yml", text) == [(5, "IAC-compose-public-db-port")]
