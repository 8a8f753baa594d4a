"""kube/gather.py in a small cluster (at most SMALL_CLUSTER nodes): what a GET each would read is
one list of its kind, and where the list is refused, the GETs again, with the same answers."""

import pytest

from kubectl_gpuisolate.errors import api_error
from kubectl_gpuisolate.kube import essentials, gather

from ..evict_fakes import WORKER
from ..factories import GPU_A, GPU_TAINT, gpu_node, owner, pod
from .test_gather_landing import OPTIONS, Listing, Submitted, claim_pod, pvc

PINNED = {("default", "ReplicaSet", "rs-1"): {"spec": {"template": {"spec": {"nodeName": GPU_A}}}}}
FORBIDDEN = api_error("forbidden: cannot list at the cluster scope", status=403)


class Small(Listing):
    """Counts the DaemonSet reads too; ``gone`` names DaemonSets that no longer exist."""

    def __init__(self, *args, gone=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.gone = set(gone)

    def daemonset_exists(self, namespace, name):
        self._count("daemonset_exists")
        return name not in self.gone

    def list_daemonset_keys(self, at_most):
        self._count("list_daemonset_keys")
        found = super().list_daemonset_keys(at_most)
        return None if found is None else found - {("default", name) for name in self.gone}


def cluster_of(pods, nodes=2, **kwargs):
    """The cluster, and its node list as status passes it: GPU A, then the worker ``nodes - 1`` times."""
    cluster = Small([gpu_node(GPU_A, taints=[GPU_TAINT])], pods, controllers=PINNED, **kwargs)
    gpu, worker = (essentials.landing_node(cluster.get_node(name)) for name in (GPU_A, WORKER))
    return cluster, [gpu] + [worker] * (nodes - 1)


def workload():
    return [pod("p-0", owner_ref=owner(name="rs-0")), pod("p-1", owner_ref=owner(name="rs-1")),
            pod("agent", owner_ref=owner("DaemonSet", "agent")),
            pod("orphan", owner_ref=owner("DaemonSet", "removed"))]


def plan(cluster, listed):
    found = gather.build_plans(cluster, [cluster.get_node(GPU_A)], OPTIONS, landing_check=True,
                               warn=pytest.fail, cluster_nodes=listed)
    return {d.name: d for p in found for d in p.decisions}


def verdicts(decisions):
    return {name: (d.action, d.reason) for name, d in decisions.items()}


def test_a_small_cluster_lists_each_kind_once_instead_of_a_get_each():
    cluster, listed = cluster_of(workload(), gone={"removed"})
    decisions = plan(cluster, listed)
    assert sorted(cluster.calls) == ["list_daemonset_keys", "list_template_pins ReplicaSet"]
    assert decisions["p-1"].reason == "nowhere-to-land" and decisions["p-0"].action == "move"
    pods, _, missing = gather.gather(cluster, [cluster.get_node(GPU_A)], small=True)
    assert missing == {("default", "removed")}


def test_above_the_size_the_same_reads_are_a_get_each_with_the_same_answers():
    small, listed = cluster_of(workload(), gone={"removed"})
    large, many = cluster_of(workload(), nodes=gather.SMALL_CLUSTER + 1, gone={"removed"})
    assert verdicts(plan(large, many)) == verdicts(plan(small, listed))
    assert sorted(large.calls) == ["daemonset_exists"] * 2 + ["get_controller"] * 2
    _, _, missing = gather.gather(large, [large.get_node(GPU_A)])
    assert missing == {("default", "removed")}


def test_a_caller_that_did_not_list_the_nodes_reads_one_by_one():
    cluster, _ = cluster_of(workload())
    gather.build_plans(cluster, [cluster.get_node(GPU_A)], OPTIONS, landing_check=True, warn=pytest.fail)
    assert "list_daemonset_keys" not in cluster.calls and "list_template_pins ReplicaSet" not in cluster.calls


@pytest.mark.parametrize("refused", ["list_daemonset_keys", "list_template_pins ReplicaSet"])
def test_a_refused_list_falls_back_to_the_gets_with_the_same_answers_and_no_warning(refused):
    plain, listed = cluster_of(workload(), gone={"removed"})
    cluster, _ = cluster_of(workload(), gone={"removed"}, fail={refused: FORBIDDEN})
    assert plan(cluster, listed) == plan(plain, listed)
    gets = {"list_daemonset_keys": "daemonset_exists", "list_template_pins ReplicaSet": "get_controller"}
    assert cluster.calls.count(refused) == 1 and cluster.calls.count(gets[refused]) == 2
    cluster.calls.clear()
    _, _, missing = gather.gather(cluster, [cluster.get_node(GPU_A)], small=True)
    assert missing == {("default", "removed")}


def test_a_kind_with_more_than_a_page_of_objects_is_read_with_the_gets_after_all(monkeypatch):
    monkeypatch.setattr(gather, "SMALL_LIST", 1)     # 2 DaemonSets and 2 ReplicaSets: over a page
    plain, listed = cluster_of(workload(), gone={"removed"})
    cluster, _ = cluster_of(workload(), gone={"removed"})
    cluster.controllers[("default", "ReplicaSet", "rs-0")] = {"spec": {}}
    assert verdicts(plan(cluster, listed)) == verdicts(plan(plain, listed))
    assert sorted(cluster.calls) == ["daemonset_exists"] * 2 + ["get_controller"] * 2 + [
        "list_daemonset_keys", "list_template_pins ReplicaSet"]


def test_one_controller_of_a_kind_and_no_daemonset_pod_are_a_get_and_no_list():
    cluster, listed = cluster_of([pod("p-1", owner_ref=owner(name="rs-1"))])
    assert plan(cluster, listed)["p-1"].reason == "nowhere-to-land"
    assert cluster.calls == ["get_controller"]


@pytest.mark.parametrize("small", [True, False])
def test_a_small_cluster_reads_a_movers_claim_as_soon_as_its_pods_arrive(small):
    kube, submitted = Small([], [], pvcs={("apps", "data"): pvc()}), Submitted()
    reads = gather.LandingReads(kube, OPTIONS, submitted, small=small)
    reads.arrived(gpu_node(GPU_A, taints=[GPU_TAINT]), [claim_pod()])
    early = [("_volume", kube, ("apps", "data"))] if small else []
    assert [r for r in submitted.reads if r[0] == "_volume"] == early
    reads.complete()
    assert [r for r in submitted.reads if r[0] == "_volume"] == [("_volume", kube, ("apps", "data"))]
