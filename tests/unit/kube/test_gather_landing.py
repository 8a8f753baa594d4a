"""kube/gather.py's landing check: what it reads (only when a pod would move), and how what it
cannot read is left out with a warning, never a failed plan."""

import threading

import pytest

from kubectl_gpuisolate.core.planner import MOVE, STAY, PlanOptions
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import api_error
from kubectl_gpuisolate.kube import essentials, gather

from ..evict_fakes import WORKER, FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, GPU_TOLERATION, gpu_node, owner, pod

OPTIONS = PlanOptions(Taint("nvidia.com/gpu", "true", "NoSchedule"))
HOST = "kubernetes.io/hostname"


def claim_pod(name="db-0", claim="data"):
    return pod(name, "apps", owner_ref=owner("StatefulSet", "db"),
               volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": claim}}])


def pvc(volume="pv-1", phase="Bound"):
    return {"spec": {"volumeName": volume}, "status": {"phase": phase}}


def local_pv(name, node):
    return {"metadata": {"name": name}, "spec": {"local": {"path": "/mnt"}, "nodeAffinity": {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOST, "operator": "In", "values": [node]}]}]}}}}


class Counting(FakeCluster):
    def __init__(self, *args, fail=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls, self.fail = [], fail or {}

    def _count(self, name):
        self.calls.append(name)
        if name in self.fail:
            raise self.fail[name]

    def list_nodes(self, selector=None, *, limit=None, retry=True):
        self._count("list_nodes")
        return super().list_nodes(selector, limit=limit, retry=retry)

    def list_nodes_with_version(self, selector=None):
        self._count("list_nodes_with_version")
        return FakeCluster.list_nodes(self, selector), "1"

    def get_pvc(self, namespace, name):
        self._count("get_pvc")
        return super().get_pvc(namespace, name)

    def get_pv(self, name):
        self._count("get_pv")
        return super().get_pv(name)

    def get_controller(self, namespace, kind, name):
        self._count("get_controller")
        return super().get_controller(namespace, kind, name)


def plans(cluster, nodes=None, **kwargs):
    warnings = []
    nodes = nodes or [cluster.get_node(GPU_A)]
    found = gather.build_plans(cluster, nodes, OPTIONS, landing_check=True, warn=warnings.append,
                               **kwargs)
    return {d.name: d for p in found for d in p.decisions}, warnings


def test_nothing_more_is_read_when_no_pod_would_move():
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("tol", tolerations=[GPU_TOLERATION])])
    decisions, warnings = plans(cluster)
    assert decisions["tol"].action == STAY
    assert (cluster.calls, warnings) == ([], [])


def test_a_pod_that_would_move_carries_its_landing_nodes():
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("web")])
    decisions, _ = plans(cluster)
    assert (decisions["web"].action, decisions["web"].landing) == (MOVE, (WORKER,))
    assert sorted(cluster.calls) == ["get_controller", "list_nodes"]


def test_a_pinned_pod_stays_and_a_bare_pod_is_not_judged():
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])],
                       [pod("pinned", node_selector={HOST: GPU_A}), pod("bare", owner_ref=None)])
    decisions, _ = plans(cluster)
    assert (decisions["pinned"].reason, decisions["pinned"].message) == (
        "nowhere-to-land", f"nowhere to land: nodeSelector {HOST}={GPU_A}")
    assert decisions["bare"].reason == "gated"


def test_a_local_volume_on_this_node_keeps_the_pod():
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [claim_pod()],
                       pvcs={("apps", "data"): pvc()}, pvs={"pv-1": local_pv("pv-1", GPU_A)})
    decisions, _ = plans(cluster)
    assert decisions["db-0"].message == "nowhere to land: local PV pv-1 on this node"
    assert sorted(cluster.calls) == ["get_controller", "get_pv", "get_pvc", "list_nodes"]


@pytest.mark.parametrize("claims, reason", [
    ({}, "nowhere-to-land"),                                  # the claim is missing
    ({("apps", "data"): pvc(phase="Pending")}, "not-tolerated"),  # unbound: no constraint yet
])
def test_missing_and_unbound_claims(claims, reason):
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [claim_pod()], pvcs=claims)
    decisions, _ = plans(cluster)
    assert decisions["db-0"].reason == reason
    assert "get_pv" not in cluster.calls


def test_volumes_that_cannot_be_read_are_left_out_with_one_warning():
    forbidden = api_error('persistentvolumeclaims "data" is forbidden', status=403)
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [claim_pod(), claim_pod("db-1", "other")],
                       fail={"get_pvc": forbidden})
    decisions, warnings = plans(cluster)
    assert decisions["db-0"].action == MOVE and decisions["db-1"].action == MOVE
    assert warnings == [f"the landing check leaves volumes out: {forbidden}"]


def test_a_controller_template_with_node_name_pins_its_pods():
    template = {"spec": {"template": {"spec": {"nodeName": GPU_A}}}}
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("web")],
                       controllers={("default", "ReplicaSet", "web-5d4f8"): template})
    decisions, _ = plans(cluster)
    assert decisions["web"].message == f"nowhere to land: nodeName {GPU_A} in its controller's pod template"


def test_templates_that_cannot_be_read_are_left_out_with_one_warning():
    forbidden = api_error('replicasets.apps "web" is forbidden', status=403)
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("web")],
                       fail={"get_controller": forbidden})
    decisions, warnings = plans(cluster)
    assert decisions["web"].action == MOVE
    assert warnings == [f"the landing check leaves controllers' templates out: {forbidden}"]


def test_the_runs_other_nodes_are_no_landing_even_when_planned_alone():
    # evacuate re-plans one node at a time: the run's other GPU node must stay excluded.
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), gpu_node(GPU_B)]
    cluster = Counting(nodes, [pod("web")], workers=())
    decisions, _ = plans(cluster, [cluster.get_node(GPU_A)], run={GPU_A, GPU_B})
    assert decisions["web"].message == "nowhere to land: every node is in this run"
    decisions, _ = plans(cluster, [cluster.get_node(GPU_A)])
    assert decisions["web"].landing == (GPU_B,)
    assert "can land only on GPU node(s) not in this run" in decisions["web"].warning


def test_without_the_landing_check_nothing_is_read():
    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("pinned", node_selector={HOST: GPU_A})])
    [plan] = gather.build_plans(cluster, [cluster.get_node(GPU_A)], OPTIONS)
    assert (plan.decisions[0].action, cluster.calls) == (MOVE, [])


def test_status_reuses_its_node_list_for_the_landing_check():
    from ..commands.helpers import run_command

    cluster = Counting([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("web")])
    code, out, _ = run_command(cluster, "status")
    assert code == 0 and "would move" in out
    assert cluster.calls == ["list_nodes_with_version", "get_controller"]


def test_the_landing_check_keeps_only_what_it_reads_of_a_node():
    big = gpu_node(GPU_B)
    big["metadata"]["annotations"] = {"x": "y" * 1000}
    big["status"]["nodeInfo"] = {"kernelVersion": "5"}
    found = essentials.landing_node(big)
    assert found == {"metadata": {"name": GPU_B, "labels": big["metadata"]["labels"]},
                     "spec": big["spec"], "status": {"capacity": big["status"]["capacity"]}}


class Listing(Counting):
    def list_template_pins(self, kind, at_most=None):
        self._count(f"list_template_pins {kind}")
        return super().list_template_pins(kind, at_most)


def many_owners(count):
    """``count`` pods on GPU A, each of its own ReplicaSet; rs-1's template pins it to GPU A."""
    pods = [pod(f"p-{i}", owner_ref=owner(name=f"rs-{i}")) for i in range(count)]
    controllers = {("default", "ReplicaSet", "rs-1"): {"spec": {"template": {"spec": {"nodeName": GPU_A}}}}}
    return pods, controllers


def test_many_controllers_of_a_kind_are_read_with_one_list():
    pods, controllers = many_owners(gather.LIST_OWNERS + 1)
    cluster = Listing([gpu_node(GPU_A, taints=[GPU_TAINT])], pods, controllers=controllers)
    decisions, warnings = plans(cluster)
    assert sorted(cluster.calls) == ["list_nodes", "list_template_pins ReplicaSet"] and warnings == []
    assert decisions["p-1"].reason == "nowhere-to-land"
    assert decisions["p-0"].action == MOVE


class Ordered(Listing):
    """The last node's pods are held until the controllers are listed (at most 5 s)."""

    def __init__(self, *args, last, **kwargs):
        super().__init__(*args, **kwargs)
        self.last, self.listed = last, threading.Event()

    def list_template_pins(self, kind, at_most=None):
        self.listed.set()
        return super().list_template_pins(kind, at_most)

    def list_pods_on_node(self, node_name, not_older_than=None):
        if node_name == self.last:
            self.listed.wait(5)
            self._count(f"pods {node_name}")
        return super().list_pods_on_node(node_name, not_older_than)


def spread_owners(nodes, per_node):
    """``per_node`` pods on each of ``nodes``, each of its own ReplicaSet."""
    return [pod(f"p-{n}-{i}", owner_ref=owner(name=f"rs-{n}-{i}"), node_name=n)
            for n in nodes for i in range(per_node)]


def test_the_list_of_controllers_begins_while_pods_are_still_being_read():
    names = [f"gpu-{i}" for i in range(40)]
    cluster = Ordered([gpu_node(n, taints=[GPU_TAINT]) for n in names],
                      spread_owners(names, gather.LIST_OWNERS // 10 + 1), last=names[-1])
    decisions, warnings = plans(cluster, [cluster.get_node(n) for n in names])
    calls = cluster.calls
    assert calls.index("list_template_pins ReplicaSet") < calls.index(f"pods {names[-1]}")
    assert cluster.calls.count("list_template_pins ReplicaSet") == 1 and warnings == []
    assert "get_controller" not in cluster.calls
    assert all(d.action == MOVE for d in decisions.values())


def test_controllers_of_pods_that_stay_do_not_start_a_list():
    pods = [pod(f"p-{i}", owner_ref=owner(name=f"rs-{i}"), tolerations=[GPU_TOLERATION])
            for i in range(gather.LIST_OWNERS + 1)] + [pod("web", owner_ref=owner(name="web"))]
    cluster = Listing([gpu_node(GPU_A, taints=[GPU_TAINT])], pods)
    decisions, _ = plans(cluster)
    assert "list_template_pins ReplicaSet" not in cluster.calls
    assert cluster.calls.count("get_controller") == 1 and decisions["web"].action == MOVE


def test_few_controllers_are_read_one_by_one():
    pods, controllers = many_owners(gather.LIST_OWNERS)
    cluster = Listing([gpu_node(GPU_A, taints=[GPU_TAINT])], pods, controllers=controllers)
    decisions, _ = plans(cluster)
    assert cluster.calls.count("get_controller") == gather.LIST_OWNERS
    assert "list_template_pins ReplicaSet" not in cluster.calls
    assert decisions["p-1"].reason == "nowhere-to-land"


def test_a_refused_list_of_controllers_falls_back_to_reading_each():
    pods, controllers = many_owners(gather.LIST_OWNERS + 1)
    forbidden = api_error('replicasets.apps is forbidden: cannot list at the cluster scope', status=403)
    cluster = Listing([gpu_node(GPU_A, taints=[GPU_TAINT])], pods, controllers=controllers,
                      fail={"list_template_pins ReplicaSet": forbidden})
    decisions, warnings = plans(cluster)
    assert cluster.calls.count("get_controller") == gather.LIST_OWNERS + 1 and warnings == []
    assert decisions["p-1"].reason == "nowhere-to-land"


def test_many_controllers_of_a_kind_that_cannot_be_listed_are_read_one_by_one():
    pods = [pod(f"p-{i}", owner_ref=owner("Rollout", f"r-{i}", api_version="argoproj.io/v1alpha1"))
            for i in range(gather.LIST_OWNERS + 1)]
    cluster = Listing([gpu_node(GPU_A, taints=[GPU_TAINT])], pods)
    plans(cluster)
    assert "list_template_pins Rollout" not in cluster.calls
    assert cluster.calls.count("get_controller") == gather.LIST_OWNERS + 1



class Submitted:
    """A pool that records what would be read, and runs nothing."""

    def __init__(self):
        self.reads = []

    def submit(self, fn, *args):
        self.reads.append((fn.__name__, *args))


def test_the_early_pass_plans_only_pods_that_could_start_a_read(monkeypatch):
    planned, real = [], gather.planner.plan_node

    def counting(node, pods, *rest):
        planned.extend(p["metadata"]["name"] for p in pods)
        return real(node, pods, *rest)

    monkeypatch.setattr(gather.planner, "plan_node", counting)
    pool = Submitted()
    reads = gather.LandingReads(FakeCluster([], []), OPTIONS, pool)
    node = gpu_node(GPU_A, taints=[GPU_TAINT])
    reads.arrived(node, [pod("bare", owner_ref=None), pod("ds", owner_ref=owner("DaemonSet", "agent")),
                         pod("rs-0", owner_ref=owner(name="rs-0"))])
    reads.arrived(node, [pod("again", owner_ref=owner(name="rs-0"))])     # rs-0 is counted already
    assert planned == ["rs-0"]
    reads.arrived(node, [pod(f"p-{i}", owner_ref=owner(name=f"rs-{i}"))
                         for i in range(1, gather.LIST_OWNERS + 1)])
    assert pool.reads == [("list_template_pins", "ReplicaSet", None)]
    assert len(planned) == gather.LIST_OWNERS + 1
    reads.arrived(node, [pod("late", owner_ref=owner(name="rs-late")), claim_pod("db-0", "data-0"),
                         claim_pod("db-1", "data-1")])
    assert planned[-2:] == ["db-0", "db-1"] and "late" not in planned     # ReplicaSets are listed already
    reads.arrived(node, [claim_pod("db-0-again", "data-0")])              # its claim is counted already
    assert planned[-1] == "db-1"
    reads.complete()      # the kinds not listed are read one by one, and the claims
    assert pool.reads[1:] == [("get_controller", "apps", "StatefulSet", "db"),
                              ("_volume", reads.kube, ("apps", "data-0")),
                              ("_volume", reads.kube, ("apps", "data-1"))]


class HeldDaemonSets(Counting):
    """The DaemonSet GETs are answered only once ``waits_for`` has been read (at most 5 s)."""

    def __init__(self, *args, waits_for, **kwargs):
        super().__init__(*args, **kwargs)
        self.waits_for, self.read = waits_for, threading.Event()

    def _count(self, name):
        super()._count(name)
        if name == self.waits_for:
            self.read.set()

    def daemonset_exists(self, namespace, name):
        self.read.wait(5)
        self._count("daemonset_exists")
        return True


@pytest.mark.parametrize("read", ["get_controller", "get_pv"])
def test_the_movers_controllers_and_volumes_are_read_beside_the_daemonset_gets(read):
    cluster = HeldDaemonSets([gpu_node(GPU_A, taints=[GPU_TAINT])],
                             [pod("agent", owner_ref=owner("DaemonSet", "agent")), claim_pod()],
                             pvcs={("apps", "data"): pvc()}, pvs={"pv-1": {"metadata": {"name": "pv-1"}}},
                             waits_for=read)
    decisions, warnings = plans(cluster)
    assert cluster.calls.index(read) < cluster.calls.index("daemonset_exists")
    assert decisions["db-0"].action == MOVE and warnings == []
