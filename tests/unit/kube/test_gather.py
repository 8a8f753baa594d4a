"""kube/nodes.py and kube/gather.py: named nodes are read one by one, the planner's essentials of a pod
decide exactly as the whole pod does, and gather's pipelined DaemonSet lookups."""

import pytest

from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import NotFound
from kubectl_gpuisolate.kube import essentials, gather
from kubectl_gpuisolate.kube import nodes as nodes_module

from ..factories import (
    DEFAULT_TOLERATIONS,
    GPU_A,
    GPU_B,
    GPU_TAINT,
    GPU_TOLERATION,
    INFERENCE_TOLERATIONS,
    gpu_node,
    node,
    owner,
    pdb,
    pod,
)

DS = owner("DaemonSet", "cilium")
PODS = [
    pod("web-1", "apps", labels={"app": "web"}),
    pod("cilium-a", "kube-system", owner_ref=DS, tolerations=[{"operator": "Exists"}]),
    pod("orphan-ds", "kube-system", owner_ref=owner("DaemonSet", "gone")),
    pod("static", "kube-system", owner_ref=None,
        annotations={"kubernetes.io/config.mirror": "abc", "other": "x" * 100}),
    pod("llama", "nai", tolerations=INFERENCE_TOLERATIONS, requests={"nvidia.com/gpu": "1"}),
    pod("no-toleration-gpu", "nai", limits={"nvidia.com/gpu": "1"}),
    pod("init-gpu", "nai", init_requests={"nvidia.com/mig-1g.10gb": "1"}),
    pod("claims", "nai", claims=["gpu"]),
    pod("done", "jobs", owner_ref=owner("Job", "j"), phase="Succeeded"),
    pod("going", "apps", deleting=True),
    pod("cache", "apps", volumes=[{"name": "c", "emptyDir": {}},
                                  {"name": "cfg", "configMap": {"name": "x"}}]),
    pod("bare", "apps", owner_ref=None),
    pod("tolerant", "apps", tolerations=[GPU_TOLERATION] + DEFAULT_TOLERATIONS),
    pod("guarded", "apps", labels={"app": "guarded"}),
    pod("kai-half", "nai", owner_ref=None, annotations={"gpu-fraction": "0.5", "other": "x"}),
    pod("kai-memory", "nai", annotations={"gpu-memory": "2000"}),
]
PDBS = [pdb("web", "apps", selector={"matchLabels": {"app": "web"}}),
        pdb("guard-1", "apps", selector={"matchLabels": {"app": "guarded"}}),
        pdb("guard-2", "apps", selector={"matchLabels": {"app": "guarded"}}),
        pdb("other-ns", "nai", selector={"matchLabels": {"app": "web"}})]


@pytest.mark.parametrize("flags", [{}, {"delete_emptydir_data": True, "force": True}])
def test_essentials_decide_as_the_whole_pod(flags):
    options = planner.PlanOptions(Taint.from_api(GPU_TAINT), **flags)
    target = gpu_node(GPU_A, taints=[GPU_TAINT])
    missing = frozenset({("kube-system", "gone")})
    whole = planner.plan_node(target, PODS, PDBS, options, missing)
    slim = planner.plan_node(target, [essentials.pod(p) for p in PODS], PDBS, options, missing)
    assert slim.decisions == whole.decisions
    assert {d.reason for d in whole.decisions} >= {"daemonset", "daemonset-orphan", "mirror",
                                                   "gpu-request", "resource-claim", "finished",
                                                   "terminating", "gated", "not-tolerated",
                                                   "tolerates-without-gpu", "gpu-mig", "gpu-fraction"}


def test_essentials_drop_what_the_planner_does_not_read():
    full = dict(PODS[3], status={"phase": "Running", "conditions": [{"type": "Ready"}]})
    slim = essentials.pod(full)
    assert slim["metadata"]["annotations"] == {"kubernetes.io/config.mirror": "abc"}
    assert slim["status"] == {"phase": "Running"}
    # a container without resources stays without; its name is kept (hidden_gpu names it)
    assert slim["spec"]["containers"] == [{"name": full["spec"]["containers"][0]["name"]}]
    assert "volumes" not in essentials.pod(PODS[0])["spec"]
    assert essentials.pod(PODS[10])["spec"]["volumes"] == [{"name": "c", "emptyDir": {}}]
    assert essentials.pod(PODS[14])["metadata"]["annotations"] == {"gpu-fraction": "0.5"}
    assert essentials.pod(PODS[15])["metadata"]["annotations"] == {"gpu-memory": "2000"}


@pytest.mark.parametrize("flags", [{}, {"delete_emptydir_data": True, "force": True}])
def test_shared_essentials_decide_as_the_unshared_ones(flags):
    options = planner.PlanOptions(Taint.from_api(GPU_TAINT), **flags)
    target = gpu_node(GPU_A, taints=[GPU_TAINT])
    share = essentials.Shared()
    shared = [essentials.pod(p, share) for p in PODS + PODS]
    assert shared == [essentials.pod(p) for p in PODS + PODS]
    alone = planner.plan_node(target, [essentials.pod(p) for p in PODS], PDBS, options, frozenset())
    assert planner.plan_node(target, shared[:len(PODS)], PDBS, options, frozenset()).decisions \
        == alone.decisions


def test_equal_parts_of_different_pods_are_one_object():
    share = essentials.Shared()
    first, second = (essentials.pod(pod(name, "apps", labels={"app": "web"}), share)
                     for name in ("web-1", "web-2"))
    for part in (lambda p: p["metadata"]["labels"], lambda p: p["spec"]["tolerations"],
                 lambda p: p["metadata"]["ownerReferences"], lambda p: p["spec"]["containers"],
                 lambda p: p["metadata"]["namespace"], lambda p: p["spec"]["nodeName"]):
        assert part(first) is part(second)
    assert first["metadata"]["name"] != second["metadata"]["name"]
    other = essentials.pod(pod("db-1", "apps", labels={"app": "db"}), share)
    assert other["metadata"]["labels"] == {"app": "db"}


def test_a_hash_collision_keeps_each_value_its_own():
    share = essentials.Shared()
    kept = share.part({"app": "web"})
    # Make the key of an unequal value collide with the kept one's.
    colliding = {"app": "db"}
    share._parts[hash(repr(colliding))] = kept
    assert share.part(colliding) is colliding
    assert share.part(dict(kept)) is kept


class Cluster:
    """Nodes by name, pods by node, PDBs, and which DaemonSets exist; records calls."""

    def __init__(self):
        self.nodes = {GPU_A: gpu_node(GPU_A), GPU_B: gpu_node(GPU_B), "cpu-1": node("cpu-1")}
        self.calls = []

    def get_node(self, name):
        self.calls.append(("get_node", name))
        if name not in self.nodes:
            raise NotFound(f'node "{name}" not found')
        return self.nodes[name]

    def list_nodes_with_version(self, selector=None):
        self.calls.append(("list_nodes",))
        return list(self.nodes.values()), "42"

    def list_pods_on_node(self, name, not_older_than=None):
        self.calls.append(("list_pods", name, not_older_than))
        return [dict(p, spec=dict(p["spec"], nodeName=name)) for p in PODS[:3]]

    def list_pdbs(self):
        return list(PDBS)

    def daemonset_exists(self, namespace, name):
        self.calls.append(("daemonset", namespace, name))
        return name != "gone"


def test_named_nodes_are_read_one_by_one_in_the_given_order():
    cluster = Cluster()
    nodes, version = nodes_module.find_nodes_with_version(cluster, [GPU_B, GPU_A], None, None, warn=print)
    assert [n["metadata"]["name"] for n in nodes] == [GPU_B, GPU_A] and version is None
    assert ("list_nodes",) not in cluster.calls
    with pytest.raises(NotFound, match="node\\(s\\) not found: nope, gone"):
        nodes_module.find_nodes_with_version(cluster, [GPU_A, "nope", "gone"], None, None, warn=print)


def test_selected_nodes_come_with_the_list_version():
    from kubectl_gpuisolate.core import selectors
    cluster = Cluster()
    requirements = selectors.parse("nvidia.com/gpu.present=true")
    nodes, version = nodes_module.find_nodes_with_version(cluster, [], requirements, "x", warn=print)
    assert [n["metadata"]["name"] for n in nodes] == [GPU_A, GPU_B] and version == "42"


def test_gather_pins_reads_and_looks_up_each_daemonset_once():
    cluster = Cluster()
    nodes = [cluster.nodes[GPU_A], cluster.nodes[GPU_B]]
    pods_by_node, pdbs, missing = gather.gather(cluster, nodes, not_older_than="42")
    assert list(pods_by_node) == [GPU_A, GPU_B] and pdbs == PDBS
    assert missing == frozenset({("kube-system", "gone")})
    assert sorted(c for c in cluster.calls if c[0] == "daemonset") == [
        ("daemonset", "kube-system", "cilium"), ("daemonset", "kube-system", "gone")]
    assert {c[2] for c in cluster.calls if c[0] == "list_pods"} == {"42"}
    _, _, none = gather.gather(Cluster(), nodes, check_daemonsets=False)
    assert none == frozenset()
