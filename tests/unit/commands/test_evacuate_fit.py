"""evacuate's advice around the move (issue #13, items 3 and 4) against a fake cluster: the fit
warning before the first eviction (dry runs too), and the replacements the scheduler marks
Unschedulable after it (not in dry runs; the exit code unchanged)."""

import io

import pytest

from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.errors import ConnectionFailed
from kubectl_gpuisolate.evacuation.fit import check_fit
from kubectl_gpuisolate.exits import EXIT_OK

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, UNSCHEDULABLE, node, owner, pod, unschedulable_replacement
from .test_evacuate import execute, options, seed_like, web

CPU_NODES = ["cpu-1", "cpu-2", "cpu-3"]


def cpu_node(name, cpu="4", memory="16Gi"):
    found = node(name, capacity={"cpu": "8", "memory": "32Gi", "pods": "110"})
    found["status"]["allocatable"] = {"cpu": cpu, "memory": memory, "pods": "110"}
    return found


def decision(name, landing, namespace="apps"):
    return planner.PodDecision(namespace, name, f"uid-{namespace}-{name}", planner.MOVE,
                               "not-tolerated", "does not tolerate", owner="ReplicaSet/web-5d4f8",
                               owner_uid="uid-web-5d4f8", landing=tuple(landing))


def plan(*decisions):
    return planner.NodePlan(GPU_A, 2, [], False, decisions=list(decisions))


def fit_cluster():
    """cpu-1 has 1 CPU free (4 - 3), cpu-2 2.5 (4 - 1.5), cpu-3 16; memory is plenty."""
    nodes, pods = seed_like()
    nodes += [cpu_node("cpu-1"), cpu_node("cpu-2"), cpu_node("cpu-3", cpu="16", memory="64Gi")]
    pods += [pod("busy-1", requests={"cpu": "3"}, node_name="cpu-1"),
             pod("busy-2", requests={"cpu": "1500m", "memory": "1Gi"}, node_name="cpu-2"),
             pod("done", requests={"cpu": "4"}, node_name="cpu-2", phase="Succeeded"),
             web("web-3", requests={"cpu": "2", "memory": "1Gi"}),
             web("web-4", requests={"cpu": "1500m"}, init_requests={"memory": "12Gi"})]
    return FakeCluster(nodes, pods, workers=())


def warnings_of(err):
    return [line for line in err.splitlines() if line.startswith("Warning:")]


def fit(cluster, plans, *argv):
    err = io.StringIO()
    before = check_fit(cluster, plans, options(*argv), err)
    return before, warnings_of(err.getvalue())


def test_a_landing_set_short_of_cpu_is_one_warning():
    cluster = fit_cluster()
    both = [decision("web-3", ["cpu-1", "cpu-2"]), decision("web-4", ["cpu-2", "cpu-1"])]
    before, said = fit(cluster, [plan(*both)])
    assert said == []                                    # 3.5 CPU needed, 3.5 free: it fits
    assert cluster.reads == ["pod requests", "unscheduled pods"] and before == frozenset()
    cluster.pods[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1600m"
    _, said = fit(cluster, [plan(both[0]), plan(both[1])])
    assert said == ["Warning: 2 pods need 3.6 CPU; their landing nodes have 3.5 free "
                    "(cpu-1, cpu-2); some replacements may stay Pending"]


def test_memory_counts_the_largest_init_container():
    cluster = fit_cluster()
    cluster.pods[-1]["spec"]["initContainers"][0]["resources"]["requests"]["memory"] = "15.5Gi"
    _, said = fit(cluster, [plan(decision("web-4", ["cpu-2"]))])
    assert said == ["Warning: 1 pod needs 15.5 GiB of memory; its landing node has 15.0 GiB free "
                    "(cpu-2); some replacements may stay Pending"]


def test_sets_that_fit_alone_but_not_together_are_warned_of_as_a_whole():
    cluster = fit_cluster()
    cluster.pods[-2]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2500m"
    _, said = fit(cluster, [plan(decision("web-3", ["cpu-2"]), decision("web-4", ["cpu-1", "cpu-2"]))])
    assert said == ["Warning: together, the 2 pods that move need 4.0 CPU; all their landing nodes "
                    "have 3.5 free (cpu-1, cpu-2); some replacements may stay Pending"]


def test_pods_with_room_enough_raise_no_warning():
    _, said = fit(fit_cluster(), [plan(decision("web-3", ["cpu-3"]), decision("web-4", ["cpu-3"]))])
    assert said == []


def refuse(*args):
    raise ConnectionFailed("cannot reach the API server")


def test_a_failed_read_is_a_warning_not_a_failed_run():
    cluster = fit_cluster()
    cluster.list_pod_requests = refuse
    before, said = fit(cluster, [plan(decision("web-3", ["cpu-1"]))])
    assert before == frozenset() and said == [
        "Warning: could not read the pods and nodes to check whether the moving pods fit where "
        "they can land: cannot reach the API server"]
    cluster.list_unscheduled_pods = refuse
    before, said = fit(cluster, [plan(decision("web-3", []))])
    assert before is None and said == [
        "Warning: could not list the unscheduled pods, so the moved pods' replacements will not "
        "be watched: cannot reach the API server"]


def test_the_baseline_of_the_replacement_watch_is_the_unscheduled_pods():
    cluster = fit_cluster()
    cluster.pods.append(unschedulable_replacement("web-5d4f8-old", "apps"))
    before, _ = fit(cluster, [plan(decision("web-3", []))])
    assert before == {"uid-apps-web-5d4f8-old"} and cluster.reads == ["unscheduled pods"]


def test_the_pods_are_listed_per_node_when_the_nodes_to_read_are_few():
    cluster = fit_cluster()
    for i in range(4):                                   # 9 nodes: 3 to read is a third of them
        cluster.nodes[f"idle-{i}"] = cpu_node(f"idle-{i}")
    both = [decision("web-3", ["cpu-1", "cpu-2"]), decision("web-4", ["cpu-2", "cpu-1"])]
    cluster.pods[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1600m"
    _, said = fit(cluster, [plan(*both)], "--dry-run=client")
    assert sorted(cluster.reads) == [f"pod requests on {n}" for n in ("cpu-1", "cpu-2", GPU_A)]
    assert said == ["Warning: 2 pods need 3.6 CPU; their landing nodes have 3.5 free "
                    "(cpu-1, cpu-2); some replacements may stay Pending"]
    cluster.reads.clear()
    fit(cluster, [plan(decision("web-3", sorted(cluster.nodes)[:5]))], "--dry-run=client")
    assert cluster.reads == ["pod requests"]             # 6 of 9: one cluster-wide list


@pytest.mark.parametrize("argv, reads", [(["--dry-run=client"], []), (["--dry-run=server"], []),
                                         ([], ["unscheduled pods"])])
def test_without_landing_nodes_only_a_real_run_reads_the_pods(argv, reads):
    cluster = fit_cluster()
    _, said = fit(cluster, [plan(decision("web-3", []))], *argv)
    assert said == [] and cluster.reads == reads


SHORT = ("Warning: 3 pods need 4.0 CPU; their landing nodes have 3.5 free (cpu-1, cpu-2); some "
         "replacements may stay Pending")


def short_cluster():
    """The moving pods land on cpu-1 and cpu-2 (the landing check), which lack 0.5 CPU."""
    cluster = fit_cluster()
    del cluster.nodes["cpu-3"]
    cluster.pods[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    return cluster


def test_the_fit_warning_comes_before_the_first_eviction():
    cluster = short_cluster()
    code, _, err = execute(cluster, GPU_A)
    lines = err.splitlines()
    warning = next(i for i, line in enumerate(lines) if "CPU; their landing nodes have" in line)
    first_eviction = next(i for i, line in enumerate(lines) if "evicting pod" in line)
    assert warning < first_eviction and code == EXIT_OK
    assert lines[warning] == SHORT
    assert cluster.reads[:2] == ["pod requests", "unscheduled pods"]


@pytest.mark.parametrize("dry_run", ["--dry-run=client", "--dry-run=server"])
def test_dry_runs_warn_too_and_watch_nothing(dry_run):
    cluster = short_cluster()
    cluster.on_evict = lambda c, name: c.pods.append(unschedulable_replacement("web-new", "apps"))
    code, out, err = execute(cluster, GPU_A, dry_run)
    assert SHORT in err.splitlines()
    assert cluster.reads == ["pod requests"] and "Unschedulable" not in err + out


def replaced_by_unschedulable(cluster, name):
    if name == "web-1":
        cluster.pods.append(unschedulable_replacement("web-5d4f8-new", "apps"))


def test_an_unschedulable_replacement_is_reported_and_the_exit_code_kept():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods, on_evict=replaced_by_unschedulable)
    code, out, err = execute(cluster, GPU_A)
    line = ("Warning: replacement apps/web-5d4f8-new of ReplicaSet/web-5d4f8 is Unschedulable: "
            + UNSCHEDULABLE)
    lines = err.splitlines()
    assert line in lines and code == EXIT_OK
    assert lines.index(line) > next(i for i, x in enumerate(lines) if "evicted pod apps/web-1" in x)
    assert "Replacements the scheduler marked Unschedulable:" in out and "apps/web-5d4f8-new" in out
    assert cluster.reads == ["pod requests"] + ["unscheduled pods"] * 32


def test_a_replacement_from_before_the_run_is_not_one():
    nodes, pods = seed_like()
    pods.append(unschedulable_replacement("web-5d4f8-old", "apps"))
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, GPU_A)
    assert "Unschedulable" not in err + out and cluster.reads.count("unscheduled pods") == 3


def test_pods_of_other_controllers_are_not_watched():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods, on_evict=lambda c, name: c.pods.append(
        unschedulable_replacement("api-new", "apps", owner_ref=owner("ReplicaSet", "api"))))
    code, out, err = execute(cluster, GPU_A)
    assert "Unschedulable" not in err + out and code == EXIT_OK


def test_a_pod_too_large_for_any_landing_node_alone_is_warned_of():
    cluster = fit_cluster()
    cluster.pods[-2]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    _, said = fit(cluster, [plan(decision("web-3", ["cpu-1", "cpu-2"]))])
    assert said == ["Warning: a pod needs 3.0 CPU; the landing node with the most free has 2.5 "
                    "(cpu-2); its replacement will stay Pending"]
    cluster.pods[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2600m"
    _, said = fit(cluster, [plan(decision("web-3", ["cpu-1", "cpu-2", "cpu-3"]),
                                 decision("web-4", ["cpu-1", "cpu-2", "cpu-3"]))])
    assert said == []                                    # cpu-3 has room for both
    del cluster.nodes["cpu-3"]
    cluster.pods[-2]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "800m"
    cluster.pods[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2600m"
    _, said = fit(cluster, [plan(decision("web-3", ["cpu-1", "cpu-2"]),
                                 decision("web-4", ["cpu-1", "cpu-2"]))])
    assert said == ["Warning: a pod needs 2.6 CPU; the landing node with the most free has 2.5 "
                    "(cpu-2); its replacement will stay Pending"]


def test_the_runs_own_node_list_serves_the_fit_check():
    cluster = short_cluster()
    calls = []
    real = cluster.list_nodes
    cluster.list_nodes = lambda *args, **kw: calls.append(args) or real(*args, **kw)
    cluster.list_nodes_with_version = lambda selector=None: (real(selector), "1")   # the run's list
    code, _, err = execute(cluster, "--dry-run=client")          # the GPU nodes found by the rules
    assert SHORT in err.splitlines() and calls == []
