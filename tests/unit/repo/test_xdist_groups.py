"""`make test` runs on two workers with `--dist loadgroup`: tests that share a directory of the
checkout (the infra synth's build/, the fixture depot's snapshots, one DynamoDB Local) share an
`xdist_group` and must run on one worker. pytest-xdist groups by suffixing the node id with
`@<group>`; with a pytest it cannot do that for (9.2 moved the id), every group silently spread
over both workers. This test fails then."""

import pytest


@pytest.mark.spec("TST-1")
@pytest.mark.xdist_group("group-probe")
def test_loadgroup_puts_the_group_in_the_node_id(request):
    if not getattr(request.config.option, "loadgroup", False):
        return  # not run by `make test`'s scheduler: nothing is grouped, nothing to check
    assert request.node.nodeid.endswith("@group-probe"), request.node.nodeid
