"""evacuate with a NoExecute GPU taint: --taint-first fences with NoSchedule, evicts, then seals with
NoExecute only when no pod left would be deleted (else exit 13, the fence stays and the report
names the pods); a NoSchedule GPU taint does not count as the NoExecute one; PreferNoSchedule
is refused before connecting."""

import json

import pytest

from kubectl_gpuisolate.errors import UsageError
from kubectl_gpuisolate.exits import EXIT_FENCED, EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT, EXIT_USAGE

from ..evict_fakes import FakeClock, FakeCluster, pdb_429
from ..factories import GPU_A, GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod
from .helpers import table_rows
from .test_evacuate import execute, options

NOEXEC_SPEC = "nvidia.com/gpu=true:NoExecute"
NO_EXECUTE = dict(GPU_TAINT, effect="NoExecute")
TOL_NOEXEC = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}
TOL_KEY = {"key": "nvidia.com/gpu", "operator": "Exists"}       # every effect
SEAL = ("--taint-first", "--gpu-taint", NOEXEC_SPEC, "--timeout", "0")   # the fake clock: no deadline


def web(name="web-1"):
    return pod(name, "apps", labels={"app": "web"})


def agents():
    """What stays on a GPU node and lacks a NoExecute toleration: the seed's inference pod and
    a DaemonSet agent."""
    return [pod("llama", "nai-admin", tolerations=INFERENCE_TOLERATIONS,
                requests={"nvidia.com/gpu": "1"}),
            pod("dcgm", "gpu-operator", owner_ref=owner("DaemonSet", "dcgm-exporter"))]


def writes(cluster):
    return [e for e in cluster.log if e[0] == "taint"]


def evictions(cluster):
    return [e[1] for e in cluster.log if e[0] == "evict"]


def taints(cluster):
    return cluster.nodes[GPU_A]["spec"].get("taints")


def test_fence_evict_then_seal_and_remove_the_fence():
    cluster = FakeCluster([gpu_node(GPU_A)], [web(), pod("tol", tolerations=[TOL_KEY])])
    code, out, err = execute(cluster, *SEAL)
    assert code == EXIT_OK
    assert evictions(cluster) == ["apps/web-1"]
    assert writes(cluster) == [("taint", GPU_A)] * 3        # fence on, NoExecute on, fence off
    assert taints(cluster) == [NO_EXECUTE]
    assert out.splitlines()[0] == f"node/{GPU_A} tainted"
    assert (f"  node/{GPU_A}: {NOEXEC_SPEC} applied; the fence nvidia.com/gpu=true:NoSchedule "
            "removed") in out.splitlines()
    assert f"node/{GPU_A}: {NOEXEC_SPEC} applied; the fence" in err


def test_pods_that_stay_and_lack_the_toleration_keep_the_fence_exit_13():
    cluster = FakeCluster([gpu_node(GPU_A)], [web()] + agents())
    code, out, _ = execute(cluster, *SEAL)
    assert code == EXIT_FENCED
    assert taints(cluster) == [GPU_TAINT]               # the NoSchedule fence, nothing else
    assert writes(cluster) == [("taint", GPU_A)] and evictions(cluster) == ["apps/web-1"]
    assert table_rows(out, ("NODE", "POD")) == [
        [GPU_A, "nai-admin/llama", NOEXEC_SPEC, "at once", "gpu-consumer"],
        [GPU_A, "gpu-operator/dcgm", NOEXEC_SPEC, "at once", "daemonset"]]
    assert (f"  node/{GPU_A}: {NOEXEC_SPEC} not applied: 2 pod(s) that stay would be deleted by "
            "it; the node keeps the fence nvidia.com/gpu=true:NoSchedule") in out.splitlines()


def test_the_json_document_names_the_pods_and_the_toleration_they_lack():
    cluster = FakeCluster([gpu_node(GPU_A)], [web()] + agents()[:1])
    code, out, _ = execute(cluster, *SEAL, "-o", "json")
    assert code == EXIT_FENCED
    seal = json.loads(out)["nodes"][0]["noExecute"]
    assert seal == {"applied": False, "taint": NOEXEC_SPEC,
                    "fence": "nvidia.com/gpu=true:NoSchedule", "fenceRemoved": False,
                    "note": f"{NOEXEC_SPEC} not applied: 1 pod(s) that stay would be deleted by "
                            "it; the node keeps the fence nvidia.com/gpu=true:NoSchedule",
                    "wouldDelete": [{"pod": "nai-admin/llama", "lacks": NOEXEC_SPEC,
                                     "afterSeconds": 0, "why": ["gpu-consumer"], "pdbs": []}]}


def test_a_toleration_with_seconds_still_counts_as_deleted():
    lingering = pod("agent", tolerations=[dict(TOL_NOEXEC, tolerationSeconds=300)],
                    owner_ref=owner("DaemonSet", "agent"))
    cluster = FakeCluster([gpu_node(GPU_A)], [lingering])
    code, out, _ = execute(cluster, *SEAL)
    assert code == EXIT_FENCED and taints(cluster) == [GPU_TAINT]
    assert table_rows(out, ("NODE", "POD")) == [
        [GPU_A, "default/agent", f"{NOEXEC_SPEC} without tolerationSeconds", "after 300s",
         "daemonset"]]


def test_an_existing_noschedule_taint_is_the_fence_and_is_kept():
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], [web()])
    code, out, _ = execute(cluster, *SEAL)
    assert code == EXIT_OK
    assert taints(cluster) == [GPU_TAINT, NO_EXECUTE]   # not this run's fence: left alone
    assert f"  node/{GPU_A}: {NOEXEC_SPEC} applied" in out.splitlines()


def test_a_node_already_noexecute_is_planned_against_it_without_a_fence():
    cluster = FakeCluster([gpu_node(GPU_A, taints=[NO_EXECUTE])], [web()])
    code, out, _ = execute(cluster, *SEAL, "-o", "json")
    assert code == EXIT_OK and writes(cluster) == [] and taints(cluster) == [NO_EXECUTE]
    node = json.loads(out)["nodes"][0]
    assert node["moved"] == ["apps/web-1"] and "noExecute" not in node


def test_without_taint_a_noschedule_gpu_taint_is_not_the_noexecute_one():
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], [web()])
    code, _, err = execute(cluster, "--gpu-taint", NOEXEC_SPEC)
    assert code == EXIT_PREFLIGHT and cluster.log == []
    assert f"node/{GPU_A} refused: it lacks the GPU taint {NOEXEC_SPEC}" in err


def test_pods_left_keep_the_fence_and_exit_10():
    blocking = pdb("web", "apps", selector={"matchLabels": {"app": "web"}}, allowed=0, desired=1,
                   healthy=0, expected=1)
    cluster = FakeCluster([gpu_node(GPU_A)], [web()], [blocking],
                          script={"web-1": [pdb_429("web", 1, 0)]})
    code, out, _ = execute(cluster, *SEAL, "--timeout", "1m", clock=FakeClock(lanes_only=True))
    assert code == EXIT_INCOMPLETE and taints(cluster) == [GPU_TAINT]
    assert (f"  node/{GPU_A}: {NOEXEC_SPEC} not applied: pods were left on the node; the node "
            "keeps the fence nvidia.com/gpu=true:NoSchedule") in out.splitlines()


@pytest.mark.parametrize("dry_run, suffix", [("client", "(dry run)"),
                                             ("server", "(server dry run)")])
def test_dry_runs_write_nothing_and_say_what_would_happen(dry_run, suffix):
    cluster = FakeCluster([gpu_node(GPU_A)], [web()])
    code, out, _ = execute(cluster, *SEAL, f"--dry-run={dry_run}")
    assert code == EXIT_OK and writes(cluster) == [] and taints(cluster) is None
    assert (f"  node/{GPU_A}: {NOEXEC_SPEC} applied {suffix}; the fence "
            f"nvidia.com/gpu=true:NoSchedule removed {suffix}") in out.splitlines()


def test_dry_run_judges_only_the_pods_that_would_stay():
    cluster = FakeCluster([gpu_node(GPU_A)], [web()] + agents()[1:])
    code, out, _ = execute(cluster, *SEAL, "--dry-run=client")
    assert code == EXIT_FENCED and cluster.log == []
    assert [r[1] for r in table_rows(out, ("NODE", "POD"))] == ["gpu-operator/dcgm"]


def test_prefer_no_schedule_is_refused_before_connecting():
    with pytest.raises(UsageError) as caught:
        options("--gpu-taint", "nvidia.com/gpu=true:PreferNoSchedule")
    assert caught.value.exit_code == EXIT_USAGE
    assert str(caught.value) == ("evacuate cannot use nvidia.com/gpu=true:PreferNoSchedule: "
                                 "PreferNoSchedule is no fence (the scheduler may put evicted "
                                 "pods straight back); use NoSchedule")


def test_behind_the_fence_a_pod_tolerating_only_noexecute_moves():
    cluster = FakeCluster([gpu_node(GPU_A)], [pod("tol", tolerations=[TOL_NOEXEC])])
    code, _, _ = execute(cluster, *SEAL)
    assert code == EXIT_OK and evictions(cluster) == ["default/tol"]
    assert taints(cluster) == [NO_EXECUTE]


def test_without_taint_a_node_already_noexecute_warns_about_what_its_taint_deletes():
    lingering = pod("agent", tolerations=[dict(TOL_NOEXEC, tolerationSeconds=300)],
                    owner_ref=owner("DaemonSet", "agent"))
    cluster = FakeCluster([gpu_node(GPU_A, taints=[NO_EXECUTE])], [web(), lingering])
    code, _, err = execute(cluster, "--gpu-taint", NOEXEC_SPEC, "--timeout", "0")
    assert code == EXIT_OK and evictions(cluster) == ["apps/web-1"] and writes(cluster) == []
    assert (f"Warning: node/{GPU_A} has the NoExecute GPU taint: the taint-eviction controller "
            "deletes, bypassing every PodDisruptionBudget, apps/web-1, default/agent (after "
            "300s); evacuate evicts through the Eviction API only those it reaches first") \
        in err.splitlines()


def test_a_noschedule_run_reads_no_pods_for_noexecute_warnings():
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT, NO_EXECUTE])], [web()])
    code, _, err = execute(cluster, "--timeout", "0")
    assert code == EXIT_OK and "taint-eviction controller" not in err


def test_a_node_whose_turn_never_came_keeps_the_fence():
    import threading
    stop = threading.Event()
    stop.set()                       # interrupted before the first node
    cluster = FakeCluster([gpu_node(GPU_A)], [web()])
    code, out, _ = execute(cluster, *SEAL, stop=stop)
    assert evictions(cluster) == [] and taints(cluster) == [GPU_TAINT]
    assert (f"  node/{GPU_A}: {NOEXEC_SPEC} not applied: its turn never came; the node keeps the "
            "fence nvidia.com/gpu=true:NoSchedule") in out.splitlines()
    assert code == EXIT_INCOMPLETE
