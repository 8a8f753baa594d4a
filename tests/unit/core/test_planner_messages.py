"""core/planner.py, word for word: each rule's message and warning (status prints them), and what a
pod or PDB without the usual metadata is planned as."""

import pytest

from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.core.planner import PlanOptions, pdb_state, plan_node

from ..factories import GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod
from .test_planner import EMPTY_DIR, MANAGED, one_decision

TAINT = "nvidia.com/gpu=true:NoSchedule"
AFTER_RESTART = "after a restart it could not be scheduled on this node"

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
