"""core/planner.py, word for word: each rule's message and warning (status prints them), and what a
pod or PDB without the usual metadata is planned as."""

import pytest

from kubectl_gpuisolate.core import landing, planner
from kubectl_gpuisolate.core.planner import PlanOptions, pdb_state, plan_node

from ..factories import GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod
from .test_planner import EMPTY_DIR, MANAGED, one_decision

TAINT = "nvidia.com/gpu=true:NoSchedule"
AFTER_RESTART = "after a restart it could not be scheduled on this node"


def with_env(the_pod, env):
    the_pod["spec"]["containers"][0]["env"] = env
    return the_pod

# (id, pod, one_decision's keyword arguments, message, warning)
MESSAGE_CASES = [
    ("terminating", pod(deleting=True), {},
     "already terminating; waiting for it, not evicting again", ""),
    ("mirror", pod(annotations={"kubernetes.io/config.mirror": "abc"}), {},
     "mirror (static) pod, managed by the kubelet", ""),
    ("daemonset", pod(owner_ref=owner("DaemonSet", "cilium")), {},
     "DaemonSet pod; it belongs on every node", ""),
    ("daemonset-orphan", pod("fluentbit-x", "kommander", owner_ref=owner("DaemonSet", "gone")),
     {"missing": frozenset({("kommander", "gone")})},
     "DaemonSet pod whose DaemonSet is gone; never evicted",
     "pod kommander/fluentbit-x belongs to a deleted DaemonSet; delete it by hand if it is unwanted"),
    ("finished-failed", pod(phase="Failed"), {},
     "finished (Failed); holds no resources, kept for its logs", ""),
    ("two-gpu-resources", pod("llama", "nai", requests={"nvidia.com/gpu": "1", "amd.com/gpu": "1"}), {},
     "uses amd.com/gpu, nvidia.com/gpu",
     f"GPU pod nai/llama uses amd.com/gpu, nvidia.com/gpu but does not tolerate {TAINT}; {AFTER_RESTART}"),
    ("two-claims", pod("llama", "nai", claims=["a", "b"]), {},
     "uses resource claims a-claim, b-claim (claims not readable: kept as GPU claims)",
     f"GPU pod nai/llama uses resource claims a-claim, b-claim (claims not readable: kept as GPU claims) "
     f"but does not tolerate {TAINT}; {AFTER_RESTART}"),
    ("gpu-tolerated", pod(requests={"nvidia.com/gpu": "1"}, tolerations=INFERENCE_TOLERATIONS), {},
     "uses nvidia.com/gpu", ""),
    ("tolerates", pod(tolerations=INFERENCE_TOLERATIONS), {},
     f"tolerates {TAINT} and uses no GPU: an isolation leak",
     f"isolation leak: pod default/web-5d4f8-abcde tolerates {TAINT} and uses no GPU; remove the "
     "toleration nvidia.com/gpu:NoSchedule (Exists) from ReplicaSet/web-5d4f8"),
    ("emptydir", pod(volumes=EMPTY_DIR), {},
     f"does not tolerate {TAINT}, but has emptyDir data (use --delete-emptydir-data)", ""),
    ("both-gates", pod(owner_ref=None, volumes=EMPTY_DIR), {},
     f"does not tolerate {TAINT}, but has emptyDir data; declares no controller and would not be "
     "recreated (use --delete-emptydir-data and --force)", ""),
    ("several-pdbs-no-flag", pod(labels={"app": "web"}),
     {"pdbs": [pdb("a", selector={}), pdb("b", selector={})]},
     f"does not tolerate {TAINT}, but is matched by several PodDisruptionBudgets (a, b), which the "
     "eviction API refuses; fix the PDBs", ""),
    ("all-three-gates", pod(owner_ref=None, volumes=EMPTY_DIR), {"pdbs": [pdb("a", selector={}),
                                                                           pdb("b", selector={})]},
     f"does not tolerate {TAINT}, but has emptyDir data; declares no controller and would not be "
     "recreated; is matched by several PodDisruptionBudgets (a, b), which the eviction API refuses; "
     "fix the PDBs (use --delete-emptydir-data and --force)", ""),
    ("move", pod(), {}, f"does not tolerate {TAINT}", ""),
    ("two-fractions", pod("frac", "ml", annotations={"gpu-fraction": "0.5", "gpu-memory": "2000"},
                          tolerations=INFERENCE_TOLERATIONS), {},
     "uses a GPU fraction gpu-fraction=0.5, gpu-memory=2000", ""),
    ("hidden-two-forms-untolerated", with_env(pod("job", "ml"), [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "ROCR_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]), {},
     "uses GPUs without a request: NVIDIA_VISIBLE_DEVICES=all (container main); ROCR_VISIBLE_DEVICES "
     "from fieldRef (container main)",
     "pod ml/job uses GPUs without requesting them (NVIDIA_VISIBLE_DEVICES=all (container main); "
     "ROCR_VISIBLE_DEVICES from fieldRef (container main)), bypassing the device plugin's accounting: the "
     f"scheduler does not count them; it does not tolerate {TAINT}: a restart would put it on a node "
     "without GPUs; ROCR_VISIBLE_DEVICES of container main comes from fieldRef, which is not read: kept "
     "as a GPU user"),
    ("hidden-tolerated", with_env(pod("job", "ml", tolerations=INFERENCE_TOLERATIONS),
                                  [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}]), {},
     "uses GPUs without a request: NVIDIA_VISIBLE_DEVICES=0 (container main)",
     "pod ml/job uses GPUs without requesting them (NVIDIA_VISIBLE_DEVICES=0 (container main)), bypassing "
     "the device plugin's accounting: the scheduler does not count them"),
]


@pytest.mark.parametrize("the_pod, kwargs, message, warning", [c[1:] for c in MESSAGE_CASES],
                         ids=[c[0] for c in MESSAGE_CASES])
def test_message_and_warning_word_for_word(the_pod, kwargs, message, warning):
    decision = one_decision(the_pod, **kwargs)
    assert (decision.message, decision.warning) == (message, warning)


# -- metadata the API always sets, missing: planned as empty strings, never None ---------------------
def bare_pod(**spec):
    return {"metadata": {}, "spec": dict(spec)}


@pytest.mark.parametrize("the_pod, action", [
    (bare_pod(), planner.BLOCKED),
    (bare_pod(tolerations=INFERENCE_TOLERATIONS), planner.STAY),
    ({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z"}}, planner.WAIT),
], ids=["gated", "tolerates", "terminating"])
def test_a_pod_without_namespace_name_or_uid(the_pod, action):
    decision = planner.decide(the_pod, [GPU_TAINT], [], PlanOptions(MANAGED))
    assert decision.action == action
    assert (decision.namespace, decision.name, decision.uid, decision.owner) == ("", "", "", "")


def test_pods_without_a_namespace_sort_first():
    nameless = pod("a")
    del nameless["metadata"]["namespace"]
    plan = plan_node(gpu_node(taints=[GPU_TAINT]), [pod("b", "0-ns"), nameless], [], PlanOptions(MANAGED))
    assert [(d.namespace, d.name) for d in plan.decisions] == [("", "a"), ("0-ns", "b")]


def test_daemonsets_to_check_without_a_namespace():
    ds_pod = pod("x", owner_ref=owner("DaemonSet", "cilium"))
    del ds_pod["metadata"]["namespace"]
    assert planner.daemonsets_to_check([ds_pod]) == {("", "cilium")}


# -- pdb_state at the edges -------------------------------------------------------------------------
# (id, spec, status, desired_healthy, never_allows)
PDB_EDGE_CASES = [
    ("one-pod-no-desired", {}, {"expectedPods": 1}, 0, None),
    ("one-pod-needs-it", {"minAvailable": "50%"}, {"expectedPods": 1, "desiredHealthy": 1}, 1,
     "needs all 1 pod(s) healthy"),
    ("one-pod-min-available-1", {"minAvailable": 1}, {"expectedPods": 1, "desiredHealthy": 1}, 1,
     "minAvailable 1 >= its 1 pod(s)"),
    ("no-pods-min-available-1", {"minAvailable": 1}, {"expectedPods": 0, "desiredHealthy": 1}, 1, None),
]


@pytest.mark.parametrize("spec, status, desired, never", [c[1:] for c in PDB_EDGE_CASES],
                         ids=[c[0] for c in PDB_EDGE_CASES])
def test_pdb_state_edges(spec, status, desired, never):
    state = pdb_state({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": status})
    assert (state.desired_healthy, state.never_allows) == (desired, never)


def test_pdb_state_without_metadata():
    state = pdb_state({"spec": {}, "status": {}})
    assert (state.namespace, state.name) == ("", "")


@pytest.mark.parametrize("others, named", [
    (3, "gpu-x0, gpu-x1, gpu-x2"), (4, "gpu-x0, gpu-x1, gpu-x2 and 1 more"),
    (6, "gpu-x0, gpu-x1, gpu-x2 and 3 more")])
def test_a_pod_that_lands_only_on_other_gpu_nodes_names_three_of_them(others, named):
    names = [f"gpu-x{i}" for i in range(others)]
    nodes = (gpu_node(),) + tuple(gpu_node(n) for n in names)
    gpu_only = landing.Cluster(nodes=nodes, run=frozenset({nodes[0]["metadata"]["name"]}),
                               gpu=frozenset(n["metadata"]["name"] for n in nodes))
    decision = one_decision(pod(), cluster=gpu_only)
    assert decision.warning == \
        f"pod default/web-5d4f8-abcde can land only on GPU node(s) not in this run: {named}"
