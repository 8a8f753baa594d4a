"""The sandbox's `platforms` scenario (tests/sandbox/sandboxctl/platforms.py) against the pure rules:
each node has the signal the e2e test expects, each consumer pod the reason, the busy nodes a
maintenance sign, so an e2e failure points at the cluster, not at the shapes."""

import os
import sys

import pytest

from kubectl_gpuisolate.core import gpu, maintenance, planner
from kubectl_gpuisolate.core.taints import DEFAULT_TAINT, parse_taint

from .conftest import REPO

sys.path.insert(0, os.path.join(str(REPO), "tests", "sandbox"))
from sandboxctl import platforms  # noqa: E402

OPTIONS = planner.PlanOptions(parse_taint(DEFAULT_TAINT))


@pytest.mark.parametrize("name", sorted(platforms.NODES))
def test_each_platform_node_has_the_expected_signal(name):
    assert gpu.node_signal(platforms.NODES[name]).code == platforms.EXPECTED_SIGNALS[name]


@pytest.mark.parametrize("pod", platforms.consumer_pods(), ids=lambda p: p["metadata"]["name"])
def test_each_consumer_pod_stays_for_its_reason(pod):
    node_name, reason = platforms.CONSUMERS[pod["metadata"]["name"]]
    plan = planner.plan_node(platforms.NODES[node_name], [pod], [], OPTIONS)
    assert [(d.action, d.reason) for d in plan.decisions] == [(planner.STAY, reason)]


def test_only_the_busy_nodes_are_in_someone_elses_maintenance():
    busy = {name for name, n in platforms.NODES.items() if maintenance.maintenance(n)}
    assert busy == {"plat-busy", "plat-upgrade"}
