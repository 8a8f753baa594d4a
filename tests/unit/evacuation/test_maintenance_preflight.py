"""evacuate refuses a GPU node in someone else's maintenance (exit 9, nothing evicted there), and
the refusal names who is draining it; other nodes are still evacuated."""

import io

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands import evacuate
from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.evacuation.plan import preflight
from kubectl_gpuisolate.exits import EXIT_OK, EXIT_PREFLIGHT

from ..evict_fakes import FakeClock, FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, gpu_node, pod


def options(*argv):
    return evacuate.EvacuateOptions.from_args(cli.build_parser().parse_args(["evacuate", *argv]))


def busy(kind):
    node = gpu_node(GPU_A, taints=[GPU_TAINT])
    if kind == "karpenter":
        node["spec"]["taints"].append({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})
    elif kind == "eks":
        node["spec"]["taints"].append({"key": "eks.amazonaws.com/nodegroup", "value": "unschedulable",
                                       "effect": "NoSchedule"})
    elif kind == "driver":
        node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "pod-deletion-required"
    elif kind == "autoscaler":
        node["spec"]["taints"].append({"key": "ToBeDeletedByClusterAutoscaler", "value": "1",
                                       "effect": "NoSchedule"})
    elif kind == "deleting":
        node["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    return node


WHO = {"karpenter": "Karpenter is disrupting it", "eks": "an EKS managed node group update",
       "driver": "the GPU Operator is upgrading its driver", "autoscaler": "cluster-autoscaler",
       "deleting": "it is being deleted"}


@pytest.mark.parametrize("kind", sorted(WHO))
def test_the_preflight_refuses_a_node_someone_else_drains(kind):
    plan = planner.plan_node(busy(kind), [], [], options().settings().plan_options)
    check = preflight(plan, options().settings())
    assert not check.ok
    assert len(check.refusal) == 1 and check.refusal[0].startswith(WHO[kind])
    assert check.refusal[0].endswith("; evacuate would race it, so it leaves the node alone")


@pytest.mark.parametrize("kind", sorted(WHO))
def test_evacuate_exits_9_and_evicts_nothing_there_but_evacuates_the_others(kind):
    nodes = [busy(kind), gpu_node(GPU_B, taints=[GPU_TAINT])]
    pods = [pod("web-a", "apps", node_name=GPU_A), pod("web-b", "apps", node_name=GPU_B)]
    cluster = FakeCluster(nodes, pods)
    out, err = io.StringIO(), io.StringIO()
    code = evacuate.execute(cluster, options(), out=out, err=err, clock=FakeClock(), stop=None)
    assert code == EXIT_PREFLIGHT
    assert cluster.evicted() == ["apps/web-b"]
    assert f"node/{GPU_A} refused: {WHO[kind]}" in err.getvalue()


def test_a_finished_driver_upgrade_is_no_refusal():
    node = gpu_node(GPU_A, taints=[GPU_TAINT])
    node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-done"
    cluster = FakeCluster([node], [pod("web-a", "apps", node_name=GPU_A)])
    code = evacuate.execute(cluster, options(), out=io.StringIO(), err=io.StringIO(), clock=FakeClock(),
                            stop=None)
    assert code == EXIT_OK and cluster.evicted() == ["apps/web-a"]


@pytest.mark.parametrize("kind", sorted(WHO))
def test_evacuate_taint_never_writes_to_a_node_in_someone_elses_maintenance(kind):
    untainted = busy(kind)
    untainted["spec"]["taints"] = [t for t in untainted["spec"]["taints"] if t != GPU_TAINT]
    cluster = FakeCluster([untainted, gpu_node(GPU_B)],
                          [pod("web-a", "apps", node_name=GPU_A), pod("web-b", "apps", node_name=GPU_B)])
    out, err = io.StringIO(), io.StringIO()
    code = evacuate.execute(cluster, options("--taint-first"), out=out, err=err, clock=FakeClock(), stop=None)
    assert code == EXIT_PREFLIGHT
    assert [entry for entry in cluster.log if entry[0] == "taint"] == [("taint", GPU_B)]
    assert cluster.evicted() == ["apps/web-b"]
    assert f"node/{GPU_A} refused, nothing will be evicted there:\n  {WHO[kind]}" in err.getvalue()
    assert f"node/{GPU_A} tainted" not in out.getvalue() and f"node/{GPU_B} tainted" in out.getvalue()
