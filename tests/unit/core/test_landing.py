"""core/landing.py: where a pod's replacement could land, and the constraint when nowhere."""

import pytest

from kubectl_gpuisolate.core import landing
from kubectl_gpuisolate.core.landing import Cluster, land

from ..factories import CONTROL_PLANE_TAINT, GPU_A, GPU_B, GPU_TAINT, gpu_node, node, owner, pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def labelled(name, zone="a", **extra):
    labels = {HOST: name, ZONE: zone}
    labels.update(extra)
    return labels


def cpu(name, zone="a", *, taints=None, unschedulable=False, **labels):
    return node(name, labels=labelled(name, zone, **labels), taints=taints,
                unschedulable=unschedulable)


NODES = (gpu_node(GPU_A, labels=labelled(GPU_A)),
         gpu_node(GPU_B, labels=labelled(GPU_B, "b"), taints=[GPU_TAINT]),
         cpu("cpu-a1"), cpu("cpu-a2", disk="ssd"), cpu("cpu-b1", "b"),
         cpu("cp-1", "a", taints=[CONTROL_PLANE_TAINT]))
RUN = frozenset({GPU_A})
GPUS = frozenset({GPU_A, GPU_B})


def cluster(nodes=NODES, run=RUN, gpu=GPUS, volumes=None, templates=None):
    return Cluster(nodes=tuple(nodes), run=run, gpu=gpu,
                   volumes={} if volumes is None else volumes, templates=templates or {})


def term(*expressions, fields=()):
    found = {"matchExpressions": [dict(zip(("key", "operator", "values"), e)) for e in expressions]}
    if fields:
        found["matchFields"] = [dict(zip(("key", "operator", "values"), f)) for f in fields]
    return found


def pv(name, *terms, local=False):
    spec = {"nodeAffinity": {"required": {"nodeSelectorTerms": list(terms)}}} if terms else {}
    if local:
        spec["local"] = {"path": "/mnt/disks/1"}
    else:
        spec["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}
    return {"metadata": {"name": name}, "spec": spec}


def with_claim(claim="data", **kw):
    return pod(volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": claim}}], **kw)


@pytest.mark.parametrize("the_pod, volumes, nodes", [
    (pod(), None, ("cpu-a1", "cpu-a2", "cpu-b1")),
    (pod(tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]), None,
     ("cpu-a1", "cpu-a2", "cpu-b1", "cp-1")),
    (pod(node_selector={ZONE: "b"}), None, ("cpu-b1",)),
    (pod(node_selector={"disk": "ssd"}), None, ("cpu-a2",)),
    (pod(affinity=[term((ZONE, "NotIn", ["a"]))]), None, ("cpu-b1",)),
    (pod(affinity=[term(("disk", "DoesNotExist"))]), None, ("cpu-a1", "cpu-b1")),
    (pod(affinity=[term(("disk", "Exists")), term((ZONE, "In", ["b"]))]), None, ("cpu-a2", "cpu-b1")),
    (pod(affinity=[term(fields=[("metadata.name", "In", ["cpu-a1", GPU_A])])]), None, ("cpu-a1",)),
    (with_claim(), {("default", "data"): pv("pv-z", term((ZONE, "In", ["b"])))}, ("cpu-b1",)),
    (with_claim(), {("default", "data"): None}, ("cpu-a1", "cpu-a2", "cpu-b1")),
    (with_claim(), {("default", "data"): pv("pv-free")}, ("cpu-a1", "cpu-a2", "cpu-b1")),
    (with_claim(namespace="other"), {("default", "data"): pv("pv-z", term((ZONE, "In", ["b"])))}, ()),
    (with_claim(), {("default", "data"): pv("pv-f", term((ZONE, "In", ["a"]), fields=[
        ("metadata.name", "In", ["cpu-b1"])]))}, ("cpu-a1", "cpu-a2")),
], ids=["plain", "tolerates-control-plane", "selector-zone", "selector-label", "notin", "doesnotexist",
        "terms-ored", "match-fields", "zonal-pv", "unbound-claim", "pv-without-affinity",
        "claim-of-another-namespace-is-missing", "pv-match-fields-are-skipped"])
def test_landing_nodes(the_pod, volumes, nodes):
    assert land(the_pod, cluster(volumes=volumes)).nodes == nodes


def test_the_run_and_cordoned_nodes_are_no_landing():
    nodes = NODES[:2] + (cpu("cpu-a1", unschedulable=True), cpu("cpu-a2"))
    assert land(pod(), cluster(nodes)).nodes == ("cpu-a2",)
    tolerates_cordon = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                         "operator": "Exists", "effect": "NoSchedule"}])
    assert land(tolerates_cordon, cluster(nodes)).nodes == ("cpu-a1", "cpu-a2")


def test_prefer_no_schedule_taints_do_not_filter():
    nodes = NODES[:1] + (cpu("cpu-a1", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]),
                         cpu("cpu-a2", taints=[{"key": "hard", "effect": "NoExecute"}]))
    assert land(pod(), cluster(nodes)).nodes == ("cpu-a1",)


@pytest.mark.parametrize("the_pod, kw, blocker", [
    (pod(node_selector={HOST: GPU_A}), {}, f"nodeSelector {HOST}={GPU_A}"),
    (pod(node_selector={ZONE: "a", HOST: GPU_A}), {}, f"nodeSelector {HOST}={GPU_A}"),
    (pod(node_selector={ZONE: "c", "disk": "nvme"}), {}, f"nodeSelector {ZONE}=c, disk=nvme"),
    (pod(affinity=[term((HOST, "In", [GPU_A]))]), {},
     f"required nodeAffinity {HOST} In [{GPU_A}]"),
    (pod(affinity=[term(fields=[("metadata.name", "In", [GPU_A])])]), {},
     f"required nodeAffinity metadata.name In [{GPU_A}]"),
    (pod(affinity=[term(("gpus", "Gt", ["4"]))]), {}, "required nodeAffinity gpus Gt 4"),
    (with_claim(), {"volumes": {("default", "data"): pv("pv-1", term((HOST, "In", [GPU_A])),
                                                         local=True)}},
     "local PV pv-1 on this node"),
    (with_claim(), {"volumes": {("default", "data"): pv("pv-1", term((HOST, "In", ["gone"])),
                                                         local=True)}},
     f"local PV pv-1 on {HOST} In [gone]"),
    (with_claim(), {"volumes": {("default", "data"): pv("pv-1", term((HOST, "In", [GPU_B])),
                                                         local=True)}},
     "it does not tolerate the taints of the other nodes it could use "
     f"(nvidia.com/gpu=true:NoSchedule on {GPU_B})"),
    (with_claim(), {"volumes": {("default", "data"): pv("pv-2", term((ZONE, "In", ["c"])))}},
     "PV pv-2 in zone c; no schedulable non-GPU node there"),
    (with_claim(), {"volumes": {("default", "data"): pv(
        "pv-3", term(("topology.ebs.csi.aws.com/zone", "In", ["c"])))}},
     "PV pv-3 in zone c; no schedulable non-GPU node there"),
    (with_claim(), {"volumes": {("default", "data"): pv("pv-4", term(("rack", "In", ["r9"])))}},
     "PV pv-4's nodeAffinity rack In [r9]"),
    (with_claim(), {"volumes": {}}, "PVC data does not exist"),
    (pod(owner_ref=owner("ReplicaSet", "pinned")), {"templates": {
        ("default", "ReplicaSet", "pinned"): GPU_A}},
     f"nodeName {GPU_A} in its controller's pod template"),
])
def test_the_blocker_names_the_constraint(the_pod, kw, blocker):
    found = land(the_pod, cluster(**kw))
    assert (found.nodes, found.blocker) == ((), blocker)


def test_a_pin_is_blamed_before_the_nodes_state():
    # The other workers are cordoned and tainted too, but the pin is what rules them out.
    nodes = NODES[:1] + (cpu("cpu-a1", unschedulable=True), cpu("cpu-a2", taints=[CONTROL_PLANE_TAINT]))
    found = land(pod(node_selector={HOST: GPU_A}), cluster(nodes))
    assert found.blocker == f"nodeSelector {HOST}={GPU_A}"


def test_cordons_and_taints_are_blamed_when_they_rule_out_the_rest():
    nodes = NODES[:1] + (cpu("cpu-a1", unschedulable=True), cpu("cpu-a2", unschedulable=True))
    assert land(pod(), cluster(nodes)).blocker == \
        "the other nodes it could use are cordoned (cpu-a1, cpu-a2)"
    dedicated = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    nodes = NODES[:1] + tuple(cpu(f"w{i}", taints=[dedicated]) for i in range(5))
    assert land(pod(), cluster(nodes)).blocker == (
        "it does not tolerate the taints of the other nodes it could use "
        "(dedicated=infra:NoSchedule on w0, w1, w2 and 2 more)")


def test_every_node_in_the_run():
    found = land(pod(), cluster(NODES[:2], run=GPUS))
    assert (found.nodes, found.blocker) == ((), "every node is in this run")


@pytest.mark.parametrize("the_pod, asks", [
    (pod(affinity=[term(("nvidia.com/gpu.present", "In", ["true"]))]),
     "required nodeAffinity nvidia.com/gpu.present In [true]"),
    (pod(node_selector={"nvidia.com/gpu.present": "true"}), "nodeSelector nvidia.com/gpu.present=true"),
    (pod(node_selector={HOST: GPU_A}), ""),       # one node: a pin, not a request for GPUs
    (pod(), ""),
    (pod(node_selector={ZONE: "b"}), ""),         # matches a GPU node and a CPU node
])
def test_asks_for_gpu_nodes(the_pod, asks):
    assert land(the_pod, cluster()).asks_for_gpu == asks


def test_no_request_for_gpus_is_seen_where_every_node_has_gpus():
    assert land(pod(), cluster(NODES[:2])).asks_for_gpu == ""


def test_the_template_pins_only_the_controllers_pods():
    templates = {("default", "ReplicaSet", "web-5d4f8"): "cpu-a2"}
    assert land(pod(), cluster(templates=templates)).nodes == ("cpu-a2",)
    assert land(pod(owner_ref=owner("ReplicaSet", "other")), cluster(templates=templates)).nodes == \
        ("cpu-a1", "cpu-a2", "cpu-b1")
    assert land(pod(owner_ref=None), cluster(templates=templates)).nodes == ("cpu-a1", "cpu-a2", "cpu-b1")


def test_volumes_not_read_are_not_judged():
    unread = Cluster(nodes=NODES, run=RUN, gpu=GPUS, volumes=None)
    assert land(with_claim(), unread).nodes == ("cpu-a1", "cpu-a2", "cpu-b1")
    assert landing.pod_view(with_claim(), unread).claims == ()


def test_feasible_nodes_judges_every_node():
    volumes = {("default", "data"): pv("pv-z", term((ZONE, "In", ["b"])))}
    assert landing.feasible_nodes(with_claim(), NODES, volumes) == ["cpu-b1"]
    assert landing.feasible_nodes(pod(tolerations=[{"operator": "Exists"}]), NODES) == \
        [n["metadata"]["name"] for n in NODES]
    assert landing.feasible_nodes(with_claim(), NODES) == []


def test_the_filter_table_is_in_order():
    assert [name for name, _, _ in landing.FILTERS] == [
        "nodeName", "nodeSelector", "nodeAffinity", "volumes", "unschedulable", "taints"]
    assert landing.FILTERS[:4] == landing.PLACEMENT


def test_pods_of_one_placement_are_worked_out_once(monkeypatch):
    calls = []
    real = landing._land
    monkeypatch.setattr(landing, "_land", lambda view, c: calls.append(view) or real(view, c))
    shared = cluster()
    first = land(pod("web-1"), shared)
    assert land(pod("web-2", owner_ref=owner(name="other")), shared) is first and len(calls) == 1
    tolerant = land(pod("web-3", tolerations=[{"key": "node-role.kubernetes.io/control-plane",
                                                "operator": "Exists"}]), shared)
    assert len(calls) == 2 and "cp-1" in tolerant.nodes and "cp-1" not in first.nodes
    assert land(pod("web-4", node_selector={ZONE: "b"}), shared).nodes == ("cpu-b1",)


@pytest.mark.parametrize("order", [(GPU_A, GPU_B), (GPU_B, GPU_A)])
def test_a_local_volume_is_blamed_by_where_each_pod_is(order):
    volumes = {("default", "data"): pv("pv-l", term((HOST, "In", [GPU_A])), local=True)}
    shared = cluster(volumes=volumes)
    blockers = {here: land(with_claim(node_name=here), shared).blocker for here in order}
    assert blockers[GPU_A] == "local PV pv-l on this node"
    assert blockers[GPU_B] == f"local PV pv-l on {HOST} In [{GPU_A}]"


# -- the edges of the views and blames, whole ----------------------------------------------------
def test_pod_view_of_a_pod_missing_its_fields():
    bare = {"metadata": {"ownerReferences": [{"controller": True}]}, "spec": {}}
    templates = {("", "", ""): "cpu-a1"}       # what a ref without kind and name looks up
    assert landing.pod_view(bare, cluster(templates=templates)) == \
        landing.Pod(spec={}, namespace="", here="", template_node_name="cpu-a1")
    assert landing.pod_view({}, cluster()) == landing.Pod(spec={}, namespace="", here="")


def test_names_counts_only_past_the_limit():
    nodes = [cpu(f"w{i}") for i in range(4)]
    assert landing._names(nodes[:3]) == "w0, w1, w2"
    assert landing._names(nodes) == "w0, w1, w2 and 1 more"
    assert landing._names(nodes[:1], limit=1) == "w0"


@pytest.mark.parametrize("key, zonal", [
    ("topology.kubernetes.io/zone", True), ("topology.gke.io/zone", True), ("failure-domain.zone", True),
    ("example.com/ZONE", False), ("zone", False), ("topology.kubernetes.io/zones", False)])
def test_a_zone_key_ends_in_slash_or_dot_zone(key, zonal):
    assert landing._is_zone_key(key) is zonal


def test_a_volume_blame_names_each_zone_and_skips_a_volume_that_fits():
    fits = pv("pv-ok", term((ZONE, "In", ["a"])))
    two = pv("pv-2z", term((ZONE, "In", ["c", "d"])))
    the_pod = pod(volumes=[{"name": "x", "persistentVolumeClaim": {"claimName": "ok"}},
                           {"name": "y", "persistentVolumeClaim": {"claimName": "zz"}}])
    found = land(the_pod, cluster(volumes={("default", "ok"): fits, ("default", "zz"): two}))
    assert found.blocker == "PV pv-2z in zone c, d; no schedulable non-GPU node there"


def test_a_host_path_pv_is_a_local_one_and_a_nameless_pv_is_blamed_unnamed():
    host_path = {"metadata": {}, "spec": {"hostPath": {"path": "/data"}, "nodeAffinity": {
        "required": {"nodeSelectorTerms": [term((HOST, "In", [GPU_A]))]}}}}
    assert land(with_claim(), cluster(volumes={("default", "data"): host_path})).blocker == \
        "local PV  on this node"


def test_a_volume_blame_with_every_volume_fitting_somewhere_names_their_affinity():
    a, b = pv("pv-a", term((ZONE, "In", ["a"]))), pv("pv-b", term((ZONE, "In", ["b"])))
    view = landing.Pod(spec={}, namespace="default", here=GPU_A, claims=(("x", a), ("y", b)))
    assert landing.volumes_blame(view, [cpu("cpu-a1"), cpu("cpu-b1", "b")]) == \
        "its PersistentVolumes' nodeAffinity"


def test_a_taints_blame_names_each_taint_once_with_and_without_a_value():
    keyed = {"key": "dedicated", "effect": "NoSchedule"}
    valued = {"key": "team", "value": "ml", "effect": "NoExecute"}
    nodes = NODES[:1] + (cpu("w1", taints=[keyed, valued]), cpu("w2", taints=[keyed]))
    assert land(pod(), cluster(nodes)).blocker == (
        "it does not tolerate the taints of the other nodes it could use "
        "(dedicated:NoSchedule, team=ml:NoExecute on w1, w2)")


def test_feasible_nodes_ignores_the_run_and_gpu_sets():
    assert landing.feasible_nodes(pod(), NODES[:3]) == [GPU_A, "cpu-a1"]     # GPU_B: tainted


def test_a_landing_on_gpu_nodes_only_and_a_run_of_every_node_keep_what_the_pod_asks():
    asks = pod(affinity=[term(("nvidia.com/gpu.present", "In", ["true"]))],
               tolerations=[{"operator": "Exists"}])
    found = land(asks, cluster(run=frozenset()))
    assert found == landing.Landing(nodes=(GPU_A, GPU_B), asks_for_gpu=found.asks_for_gpu, gpu_only=True)
    assert found.asks_for_gpu == "required nodeAffinity nvidia.com/gpu.present In [true]"
    every = land(asks, cluster(run=frozenset(n["metadata"]["name"] for n in NODES)))
    assert every == landing.Landing(nodes=(), blocker="every node is in this run",
                                    asks_for_gpu="required nodeAffinity nvidia.com/gpu.present In [true]")
    one_gpu = land(pod(tolerations=[{"operator": "Exists"}]), cluster(run=frozenset()))
    assert one_gpu.gpu_only is False
