"""core/planner.py: each pod's verdict (table-driven), PDB states and node plans."""

import pytest

from kubectl_gpuisolate.core import landing, planner
from kubectl_gpuisolate.core.planner import (
    BLOCKED,
    FLAG_EMPTYDIR,
    FLAG_FORCE,
    MOVE,
    STAY,
    WAIT,
    NodePlan,
    PlanOptions,
    pdb_blockers,
    pdb_state,
    plan_node,
)
from kubectl_gpuisolate.core.taints import Taint

from ..factories import (
    CONTROL_PLANE_TAINT,
    DEFAULT_TOLERATIONS,
    GPU_A,
    GPU_B,
    GPU_TAINT,
    GPU_TAINT_PRESENT,
    GPU_TOLERATION,
    INFERENCE_TOLERATIONS,
    gpu_node,
    node,
    owner,
    pdb,
    pod,
)
from .hidden_gpu_cases import HIDDEN_GPU_CASES
from .operator_cases import OPERATOR_CASES

MANAGED = Taint("nvidia.com/gpu", "true", "NoSchedule")
EMPTY_DIR = [{"name": "cache", "emptyDir": {}}]
CONFIG_VOLUME = [{"name": "config", "configMap": {"name": "cfg"}}]
APP = {"app": "web"}


def one_decision(the_pod, *, node_taints=(GPU_TAINT,), pdbs=(), missing=frozenset(), cluster=None,
                 runtime_classes=None, **options):
    plan = plan_node(gpu_node(taints=list(node_taints)), [the_pod], list(pdbs),
                     PlanOptions(MANAGED, **options), missing, cluster, runtime_classes=runtime_classes)
    assert len(plan.decisions) == 1
    return plan.decisions[0]


def case(id, the_pod, action, reason, *, flags=(), warning="", pdb_names=(), message=None,
         **kwargs):
    return pytest.param(the_pod, kwargs, action, reason, tuple(flags), warning, tuple(pdb_names),
                        message, id=id)


# A cluster for the landing check: this run's GPU node, another GPU node, two CPU workers.
GPU_AFFINITY = [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                                       "values": ["true"]}]}]
CLUSTER = landing.Cluster(
    nodes=(gpu_node(GPU_A), gpu_node(GPU_B), node("cpu-1", labels={"kubernetes.io/hostname": "cpu-1"}),
           node("cpu-2", labels={"kubernetes.io/hostname": "cpu-2"})),
    run=frozenset({GPU_A}), gpu=frozenset({GPU_A, GPU_B}))
GPU_ONLY_CLUSTER = landing.Cluster(nodes=CLUSTER.nodes[:2], run=frozenset({GPU_A}),
                                   gpu=frozenset({GPU_A, GPU_B}))

DECISION_CASES = [
    # -- where it can land (core/landing.py) -------------------------------------------------------
    case("lands-on-cpu-workers", pod(), MOVE, "not-tolerated", cluster=CLUSTER),
    case("pinned-by-hostname", pod(node_selector={"kubernetes.io/hostname": GPU_A}), STAY,
         "nowhere-to-land", cluster=CLUSTER,
         message=f"nowhere to land: nodeSelector kubernetes.io/hostname={GPU_A}"),
    case("asks-for-gpu-nodes", pod(affinity=GPU_AFFINITY), STAY, "asks-for-gpu", cluster=CLUSTER,
         message="asks for GPU nodes (required nodeAffinity nvidia.com/gpu.present In [true])",
         warning="asks for GPU nodes (required nodeAffinity nvidia.com/gpu.present In [true]) but "
                 "does not tolerate nvidia.com/gpu=true:NoSchedule"),
    case("lands-only-on-other-gpu-nodes", pod(), MOVE, "not-tolerated", cluster=GPU_ONLY_CLUSTER,
         warning=f"can land only on GPU node(s) not in this run: {GPU_B}"),
    case("bare-pod-has-no-replacement", pod(owner_ref=None, node_selector={"x": "y"}), BLOCKED,
         "gated", flags=[FLAG_FORCE], cluster=CLUSTER),
    case("tolerated-before-landing", pod(tolerations=[GPU_TOLERATION], node_selector={"x": "y"}),
         STAY, "tolerates-without-gpu", cluster=CLUSTER, warning="isolation leak: pod default/"),
    # -- tolerations against the node's GPU taint --------------------------------------------------
    case("tolerate-all", pod(tolerations=[{"operator": "Exists"}]), STAY, "tolerates-everything",
         message="tolerates every taint and uses no GPU: an isolation leak",
         warning="isolation leak: pod default/web-5d4f8-abcde tolerates every taint and uses no GPU; "
                 "remove the toleration {operator: Exists} from ReplicaSet/web-5d4f8"),
    case("leak-names-the-deployment",
         pod(tolerations=[GPU_TOLERATION], labels={"pod-template-hash": "5d4f8"}), STAY,
         "tolerates-without-gpu", warning="remove the toleration nvidia.com/gpu:NoSchedule (Exists) "
                                          "from Deployment/web"),
    case("leak-of-a-bare-pod", pod(tolerations=[GPU_TOLERATION], owner_ref=None), STAY,
         "tolerates-without-gpu", warning="from the pod itself (it has no controller)"),
    case("leak-names-every-matching-toleration",
         pod(tolerations=[{"key": "nvidia.com/gpu", "value": "true"}, {"operator": "Exists"}]
             + DEFAULT_TOLERATIONS), STAY, "tolerates-everything",
         warning="remove the toleration nvidia.com/gpu=true, {operator: Exists} from"),
    case("leak-of-a-statefulset", pod(tolerations=[GPU_TOLERATION],
                                      owner_ref=owner("StatefulSet", "db", "apps/v1")), STAY,
         "tolerates-without-gpu", warning="from StatefulSet/db"),
    case("tolerate-all-noschedule",
         pod(tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]),
         STAY, "tolerates-everything", warning="toleration {operator: Exists, effect: NoSchedule}"),
    case("tolerate-all-of-noexecute-only",
         pod(tolerations=[{"operator": "Exists", "effect": "NoExecute"}]),
         MOVE, "not-tolerated"),
    case("inference-tolerations", pod(tolerations=INFERENCE_TOLERATIONS), STAY, "tolerates-without-gpu",
         warning="isolation leak: pod default/"),
    case("default-tolerations-only", pod(), MOVE, "not-tolerated",
         message="does not tolerate nvidia.com/gpu=true:NoSchedule"),
    case("no-tolerations", pod(tolerations=[]), MOVE, "not-tolerated"),
    case("right-key-only-noexecute",
         pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]
             + DEFAULT_TOLERATIONS), MOVE, "not-tolerated"),
    case("equal-other-value",
         pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes",
                           "effect": "NoSchedule"}]), MOVE, "not-tolerated"),
    case("present-taint-equal-true",
         pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
                           "effect": "NoSchedule"}]), MOVE, "not-tolerated",
         node_taints=[GPU_TAINT_PRESENT],
         message="does not tolerate nvidia.com/gpu=present:NoSchedule"),
    case("present-taint-exists", pod(tolerations=[GPU_TOLERATION]), STAY,
         "tolerates-without-gpu",
         node_taints=[GPU_TAINT_PRESENT],
         message="tolerates nvidia.com/gpu=present:NoSchedule and uses no GPU: an isolation leak",
         warning="remove the toleration nvidia.com/gpu:NoSchedule (Exists) from"),
    case("present-and-true-taints-equal-true",
         pod(tolerations=[{"key": "nvidia.com/gpu", "value": "true"}]), MOVE, "not-tolerated",
         node_taints=[GPU_TAINT, GPU_TAINT_PRESENT],
         message="does not tolerate nvidia.com/gpu=true:NoSchedule, "
                 "nvidia.com/gpu=present:NoSchedule"),
    case("other-node-taints-ignored", pod(tolerations=[GPU_TOLERATION]), STAY,
         "tolerates-without-gpu",
         node_taints=[CONTROL_PLANE_TAINT, GPU_TAINT], warning="isolation leak: pod default/"),
    # -- a node without the GPU taint is judged against the managed taint --------------------------
    case("untainted-node-equal-true",
         pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
                           "effect": "NoSchedule"}]), STAY, "tolerates-without-gpu", node_taints=[],
         warning="isolation leak: pod default/"),
    case("untainted-node-equal-present",
         pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                           "effect": "NoSchedule"}]), MOVE, "not-tolerated", node_taints=[],
         message="does not tolerate nvidia.com/gpu=true:NoSchedule"),
    case("untainted-node-default-tolerations", pod(), MOVE, "not-tolerated", node_taints=[]),
    case("only-other-taints-node", pod(), MOVE, "not-tolerated", node_taints=[CONTROL_PLANE_TAINT],
         message="does not tolerate nvidia.com/gpu=true:NoSchedule"),
    # -- pods that are never evicted --------------------------------------------------------------
    case("daemonset", pod(owner_ref=owner("DaemonSet", "cilium")), STAY, "daemonset"),
    case("daemonset-orphan", pod("fluentbit-x", "kommander", owner_ref=owner("DaemonSet", "gone")),
         STAY, "daemonset-orphan", warning="kommander/fluentbit-x belongs to a deleted DaemonSet",
         missing=frozenset({("kommander", "gone")})),
    case("daemonset-missing-other-namespace",
         pod("fluentbit-x", "kommander", owner_ref=owner("DaemonSet", "gone")), STAY, "daemonset",
         missing=frozenset({("default", "gone")})),
    case("daemonset-not-controller",
         pod(owner_ref=owner("DaemonSet", "ds", controller=False)), BLOCKED, "gated",
         flags=[FLAG_FORCE]),
    case("daemonset-old-api-version",
         pod(owner_ref=owner("DaemonSet", "ds", api_version="extensions/v1beta1")), MOVE,
         "not-tolerated", warning="controlled by DaemonSet/ds (extensions/v1beta1), which the plugin "
                                  "does not know"),
    case("mirror", pod("kube-apiserver-n", "kube-system", owner_ref=owner("Node", GPU_A, "v1"),
                       annotations={"kubernetes.io/config.mirror": "abc"}), STAY, "mirror"),
    case("finished-succeeded", pod(phase="Succeeded", owner_ref=owner("Job", "j", "batch/v1")),
         STAY, "finished", message="finished (Succeeded); holds no resources, kept for its logs"),
    case("finished-failed", pod(phase="Failed"), STAY, "finished"),
    case("finished-bare-emptydir", pod(phase="Failed", owner_ref=None, volumes=EMPTY_DIR), STAY,
         "finished"),
    case("pending-not-finished", pod(phase="Pending"), MOVE, "not-tolerated"),
    case("terminating", pod(deleting=True), WAIT, "terminating"),
    # -- GPU consumers stay, warned when they do not tolerate the taint ---------------------------
    case("gpu-request-untolerated", pod("llama", "nai-admin", requests={"nvidia.com/gpu": "1"}),
         STAY, "gpu-request", message="uses nvidia.com/gpu",
         warning="GPU pod nai-admin/llama uses nvidia.com/gpu but does not tolerate "
                 "nvidia.com/gpu=true:NoSchedule"),
    case("gpu-request-tolerated",
         pod(requests={"nvidia.com/gpu": "1"}, tolerations=INFERENCE_TOLERATIONS),
         STAY, "gpu-request", warning=""),
    case("mig-limit-untolerated", pod(limits={"nvidia.com/mig-1g.5gb": "1"}), STAY, "gpu-mig",
         warning="uses nvidia.com/mig-1g.5gb but does not tolerate"),
    case("mig-media-extension", pod(requests={"nvidia.com/mig-1g.10gb.me": "1"}), STAY, "gpu-mig",
         message="uses nvidia.com/mig-1g.10gb.me", warning="does not tolerate"),
    case("time-sliced", pod(requests={"nvidia.com/gpu.shared": "1"}), STAY, "gpu-shared",
         message="uses nvidia.com/gpu.shared",
         warning="uses nvidia.com/gpu.shared but does not tolerate nvidia.com/gpu=true:NoSchedule"),
    case("mig-time-sliced", pod(limits={"nvidia.com/mig-3g.20gb.shared": "1"}), STAY, "gpu-shared",
         message="uses nvidia.com/mig-3g.20gb.shared", warning="does not tolerate"),
    case("gpu-beats-shared", pod(requests={"nvidia.com/gpu": "1"},
                                 init_requests={"nvidia.com/gpu.shared": "1"}),
         STAY, "gpu-request", message="uses nvidia.com/gpu, nvidia.com/gpu.shared",
         warning="does not tolerate"),
    case("neuron", pod(requests={"aws.amazon.com/neuron": "1"}), STAY, "accelerator",
         message="uses aws.amazon.com/neuron", warning="does not tolerate"),
    case("neuroncore-init", pod(init_requests={"aws.amazon.com/neuroncore": "2"}), STAY, "accelerator",
         message="uses aws.amazon.com/neuroncore", warning="does not tolerate"),
    case("vgpu", pod(limits={"nvidia.com/GRID_T4-1Q": "1"}), STAY, "accelerator",
         message="uses nvidia.com/GRID_T4-1Q", warning="does not tolerate"),
    case("tpu", pod(limits={"google.com/tpu": "4"}), STAY, "accelerator", message="uses google.com/tpu",
         warning="does not tolerate"),
    case("intel-habana", pod(requests={"gpu.intel.com/i915": "1", "habana.ai/gaudi": "1"}), STAY,
         "accelerator", message="uses gpu.intel.com/i915, habana.ai/gaudi", warning="does not tolerate"),
    case("kai-fraction", pod(annotations={"gpu-fraction": "0.5"}), STAY, "gpu-fraction",
         message="uses a GPU fraction gpu-fraction=0.5",
         warning="GPU pod default/web-5d4f8-abcde uses a GPU fraction gpu-fraction=0.5 but does not "
                 "tolerate nvidia.com/gpu=true:NoSchedule"),
    case("kai-gpu-memory", pod(annotations={"gpu-memory": "2000"}, tolerations=INFERENCE_TOLERATIONS),
         STAY, "gpu-fraction", message="uses a GPU fraction gpu-memory=2000", warning=""),
    case("empty-fraction", pod(annotations={"gpu-fraction": ""}), MOVE, "not-tolerated"),
    case("gpu-request-bare-emptydir",
         pod(requests={"nvidia.com/gpu": "1"}, owner_ref=None, volumes=EMPTY_DIR),
         STAY, "gpu-request", warning="does not tolerate"),
    case("resource-claim", pod(claims=["gpu"], tolerations=INFERENCE_TOLERATIONS), STAY,
         "resource-claim", message="uses resource claims gpu-claim (claims not readable: kept as GPU claims)",
         warning=""),
    case("resource-claim-untolerated", pod(claims=["gpu"]), STAY, "resource-claim",
         warning="uses resource claims gpu-claim (claims not readable: kept as GPU claims) "
                 "but does not tolerate"),
    case("accelerator-beats-claim", pod(claims=["gpu"], requests={"amd.com/gpu": "1"}), STAY,
         "accelerator", message="uses amd.com/gpu",
         warning="uses amd.com/gpu but does not tolerate"),
    case("zero-gpu-request", pod(requests={"nvidia.com/gpu": "0"}), MOVE, "not-tolerated"),
    # -- gates -------------------------------------------------------------------------------------
    case("emptydir", pod(volumes=EMPTY_DIR), BLOCKED, "gated", flags=[FLAG_EMPTYDIR],
         message="has emptyDir data (use --delete-emptydir-data)"),
    case("emptydir-with-option", pod(volumes=EMPTY_DIR), MOVE, "not-tolerated",
         delete_emptydir_data=True),
    case("emptydir-among-volumes", pod(volumes=CONFIG_VOLUME + EMPTY_DIR), BLOCKED, "gated",
         flags=[FLAG_EMPTYDIR]),
    case("configmap-volume", pod(volumes=CONFIG_VOLUME), MOVE, "not-tolerated"),
    case("bare", pod(owner_ref=None), BLOCKED, "gated", flags=[FLAG_FORCE],
         message="declares no controller and would not be recreated (use --force)"),
    case("bare-with-force", pod(owner_ref=None), MOVE, "not-tolerated", force=True),
    case("both-gates", pod(owner_ref=None, volumes=EMPTY_DIR), BLOCKED, "gated",
         flags=[FLAG_EMPTYDIR, FLAG_FORCE], message="(use --delete-emptydir-data and --force)"),
    case("both-gates-emptydir-lifted", pod(owner_ref=None, volumes=EMPTY_DIR), BLOCKED, "gated",
         flags=[FLAG_FORCE], delete_emptydir_data=True),
    case("both-gates-lifted", pod(owner_ref=None, volumes=EMPTY_DIR), MOVE, "not-tolerated",
         delete_emptydir_data=True, force=True),
    # -- PodDisruptionBudgets ----------------------------------------------------------------------
    case("one-pdb", pod(labels=APP), MOVE, "not-tolerated", pdb_names=["web"],
         pdbs=[pdb("web", selector={"matchLabels": APP})]),
    case("pdb-not-matching", pod(labels=APP), MOVE, "not-tolerated",
         pdbs=[pdb("db", selector={"matchLabels": {"app": "db"}})]),
    case("pdb-null-selector", pod(labels=APP), MOVE, "not-tolerated", pdbs=[pdb("nil")]),
    case("pdb-other-namespace", pod(labels=APP), MOVE, "not-tolerated",
         pdbs=[pdb("web", "prod", selector={"matchLabels": APP}), pdb("all", "prod", selector={})]),
    case("several-pdbs", pod(labels=APP), BLOCKED, "gated", pdb_names=["web", "everything"],
         message="is matched by several PodDisruptionBudgets (web, everything), which the eviction "
                 "API refuses; fix the PDBs",
         pdbs=[pdb("web", selector={"matchLabels": APP}), pdb("everything", selector={}),
               pdb("elsewhere", "prod", selector={})]),
    case("several-pdbs-and-force", pod(labels=APP, owner_ref=None), BLOCKED, "gated",
         flags=[FLAG_FORCE], pdb_names=["a", "b"],
         pdbs=[pdb("a", selector={}), pdb("b", selector={"matchExpressions": [
             {"key": "app", "operator": "Exists"}]})]),
    case("several-pdbs-but-tolerated", pod(labels=APP, tolerations=[GPU_TOLERATION]), STAY,
         "tolerates-without-gpu", pdbs=[pdb("a", selector={}), pdb("b", selector={})],
         warning="isolation leak: pod default/"),
    # -- first match wins --------------------------------------------------------------------------
    case("terminating-beats-mirror",
         pod(deleting=True, annotations={"kubernetes.io/config.mirror": "x"}), WAIT, "terminating"),
    case("mirror-beats-daemonset",
         pod(owner_ref=owner("DaemonSet", "ds"), annotations={"kubernetes.io/config.mirror": "x"}),
         STAY, "mirror"),
    case("daemonset-beats-finished", pod(owner_ref=owner("DaemonSet", "ds"), phase="Failed"),
         STAY, "daemonset"),
    case("finished-beats-gpu", pod(phase="Succeeded", requests={"nvidia.com/gpu": "1"}), STAY,
         "finished", warning=""),
    case("terminating-bare", pod(deleting=True, owner_ref=None, volumes=EMPTY_DIR), WAIT,
         "terminating"),
]
DECISION_CASES += HIDDEN_GPU_CASES + OPERATOR_CASES


@pytest.mark.parametrize("the_pod, kwargs, action, reason, flags, warning, pdb_names, message",
                         DECISION_CASES)
def test_decide(the_pod, kwargs, action, reason, flags, warning, pdb_names, message):
    decision = one_decision(the_pod, **kwargs)
    assert (decision.action, decision.reason) == (action, reason), decision.message
    assert decision.flags == flags
    assert tuple(p.name for p in decision.pdbs) == pdb_names
    if warning:
        assert warning in decision.warning
    else:
        assert decision.warning == ""
    if message is not None:
        assert message in decision.message
    meta = the_pod["metadata"]
    assert (decision.namespace, decision.name, decision.uid) == (
        meta["namespace"], meta["name"], meta["uid"])
    assert decision.ref == f"{meta['namespace']}/{meta['name']}"


@pytest.mark.parametrize("owner_ref, expected", [
    (owner("ReplicaSet", "web-1"), "ReplicaSet/web-1"),
    (owner("StatefulSet", "db", "apps/v1"), "StatefulSet/db"),
    (owner("Job", "j", "batch/v1"), "Job/j"),
    (None, ""),
    (owner("ReplicaSet", "not-controller", controller=False), ""),
], ids=["replicaset", "statefulset", "job", "bare", "non-controller-ref"])
def test_decision_owner(owner_ref, expected):
    assert one_decision(pod(owner_ref=owner_ref)).owner == expected


# -- pdb_state -------------------------------------------------------------------------------------
PDB_STATE_CASES = [
    (dict(max_unavailable=0), "maxUnavailable is 0", "max-unavailable-0"),
    (dict(max_unavailable="0%"), "maxUnavailable is 0%", "max-unavailable-0-percent"),
    (dict(min_available="100%"), "minAvailable is 100%", "min-available-100-percent"),
    (dict(min_available=3, expected=3, desired=3, healthy=3, allowed=0),
     "minAvailable 3 >= its 3 pod(s)", "min-available-equals-expected"),
    (dict(min_available=5, expected=3, desired=5, healthy=3, allowed=0),
     "minAvailable 5 >= its 3 pod(s)", "min-available-above-expected"),
    (dict(min_available="90%", expected=3, desired=3, healthy=3, allowed=0),
     "needs all 3 pod(s) healthy", "desired-equals-expected"),
    (dict(max_unavailable=1, expected=2, desired=2, healthy=2, allowed=0),
     "needs all 2 pod(s) healthy", "desired-equals-expected-max-unavailable"),
    (dict(min_available=1, expected=3, desired=1, healthy=3, allowed=2), None, "satisfiable"),
    (dict(min_available=1, expected=2, desired=1, healthy=1, allowed=0), None,
     "satisfiable-but-blocks-now"),
    (dict(max_unavailable=1, expected=3, desired=2, healthy=3, allowed=1), None,
     "max-unavailable-1"),
    (dict(max_unavailable="50%", expected=4, desired=2, healthy=4, allowed=2), None,
     "max-unavailable-percent"),
    (dict(min_available=1, expected=0, desired=0, healthy=0, allowed=0), None, "no-pods-yet"),
]


@pytest.mark.parametrize("kwargs, never", [c[:2] for c in PDB_STATE_CASES],
                         ids=[c[2] for c in PDB_STATE_CASES])
def test_pdb_state_never_allows(kwargs, never):
    state = pdb_state(pdb("p", "ns", selector={}, **kwargs))
    assert state.never_allows == never
    assert (state.namespace, state.name) == ("ns", "p")


def test_pdb_state_fields():
    state = pdb_state(pdb("nai-db", "nai-system", selector={}, min_available=1, allowed=0,
                          desired=1, healthy=1, expected=2))
    assert (state.disruptions_allowed, state.desired_healthy, state.current_healthy,
            state.expected_pods) == (0, 1, 1, 2)
    assert state.blocks_now is True


@pytest.mark.parametrize("allowed, blocks", [(0, True), (-1, True), (1, False), (3, False)],
                         ids=["zero", "negative", "one", "three"])
def test_pdb_state_blocks_now(allowed, blocks):
    assert pdb_state(pdb("p", allowed=allowed, min_available=1)).blocks_now is blocks


def test_pdb_state_without_status():
    state = pdb_state({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"minAvailable": 1}})
    assert (state.disruptions_allowed, state.expected_pods, state.never_allows) == (0, 0, None)
    assert state.blocks_now


# -- plan_node and NodePlan ------------------------------------------------------------------------
def mixed_pods():
    return [
        pod("web-b", "default", labels=APP),                                   # move
        pod("cilium-x", "kube-system", owner_ref=owner("DaemonSet", "cilium")),  # stay
        pod("web-a", "default", volumes=EMPTY_DIR),                            # blocked
        pod("llama", "nai-admin", requests={"nvidia.com/gpu": "1"}),           # stay + warning
        pod("old", "default", deleting=True),                                  # wait
        pod("bare", "apps", owner_ref=None),                                   # blocked
        pod("infer", "nai-admin", tolerations=INFERENCE_TOLERATIONS),          # stay
    ]


def test_plan_node_sorted_by_namespace_then_name():
    plan = plan_node(gpu_node(taints=[GPU_TAINT]), mixed_pods(), [], PlanOptions(MANAGED))
    assert [d.ref for d in plan.decisions] == [
        "apps/bare", "default/old", "default/web-a", "default/web-b", "kube-system/cilium-x",
        "nai-admin/infer", "nai-admin/llama"]


def test_node_plan_properties():
    node = gpu_node(GPU_B, gpus=4, taints=[CONTROL_PLANE_TAINT, GPU_TAINT])
    node["spec"]["unschedulable"] = True
    plan = plan_node(node, mixed_pods(), [], PlanOptions(MANAGED))
    assert isinstance(plan, NodePlan)
    assert (plan.name, plan.gpu_count, plan.unschedulable) == (GPU_B, 4, True)
    assert plan.tainted is True
    assert plan.gpu_taints == [GPU_TAINT]
    assert [d.name for d in plan.to_move] == ["web-b"]
    assert [d.name for d in plan.blocked] == ["bare", "web-a"]
    assert [d.name for d in plan.misplaced] == ["bare", "web-a", "web-b"]
    assert [d.name for d in plan.with_action(WAIT)] == ["old"]
    assert [d.name for d in plan.with_action(STAY)] == ["cilium-x", "infer", "llama"]
    assert [d.name for d in plan.leaks] == ["infer"]       # tolerates, requests no GPU
    assert len(plan.warnings) == 2 and "nai-admin/infer" in plan.warnings[0]
    assert "nai-admin/llama" in plan.warnings[1]


def test_node_plan_untainted_node():
    plan = plan_node(gpu_node(taints=None), mixed_pods(), [], PlanOptions(MANAGED))
    assert plan.tainted is False
    assert plan.gpu_taints == []
    assert plan.unschedulable is False
    # Judged against the managed taint all the same.
    assert [d.name for d in plan.misplaced] == ["bare", "web-a", "web-b"]


def test_node_plan_options_lift_gates():
    plan = plan_node(gpu_node(taints=[GPU_TAINT]), mixed_pods(), [],
                     PlanOptions(MANAGED, delete_emptydir_data=True, force=True))
    assert plan.blocked == []
    assert [d.name for d in plan.to_move] == ["bare", "web-a", "web-b"]


def test_plan_node_empty():
    plan = plan_node(gpu_node(taints=[GPU_TAINT]), [], [], PlanOptions(MANAGED))
    assert (plan.decisions, plan.misplaced, plan.warnings) == ([], [], [])


def test_daemonsets_to_check():
    pods = [pod("a", "kube-system", owner_ref=owner("DaemonSet", "cilium")),
            pod("b", "kube-system", owner_ref=owner("DaemonSet", "cilium")),
            pod("c", "kommander", owner_ref=owner("DaemonSet", "fluentbit")),
            pod("d", "default")]
    assert planner.daemonsets_to_check(pods) == {("kube-system", "cilium"),
                                                 ("kommander", "fluentbit")}


# -- pdb_blockers ----------------------------------------------------------------------------------
def test_pdb_blockers_only_for_misplaced_pods_sorted_and_deduplicated():
    pdbs = [
        pdb("zz-now", "b-ns", selector={"matchLabels": {"app": "now"}}, min_available=1,
            allowed=0, desired=1, healthy=1, expected=2),
        pdb("never", "a-ns", selector={"matchLabels": {"app": "never"}}, max_unavailable=0,
            allowed=0, desired=2, healthy=2, expected=2),
        pdb("fine", "a-ns", selector={"matchLabels": {"app": "fine"}}, min_available=1,
            allowed=1, desired=1, healthy=2, expected=2),
        pdb("stayer", "a-ns", selector={"matchLabels": {"app": "stayer"}}, max_unavailable=0,
            allowed=0, desired=1, healthy=1, expected=1),
        pdb("gated", "c-ns", selector={"matchLabels": {"app": "gated"}}, min_available="100%",
            allowed=0, desired=1, healthy=1, expected=1),
    ]
    node_a = [pod("n1", "b-ns", labels={"app": "now"}), pod("v1", "a-ns", labels={"app": "never"}),
              pod("f1", "a-ns", labels={"app": "fine"}),
              pod("s1", "a-ns", labels={"app": "stayer"}, tolerations=[GPU_TOLERATION])]
    node_b = [pod("n2", "b-ns", labels={"app": "now"}),
              pod("v2", "a-ns", labels={"app": "never"}),
              pod("g1", "c-ns", labels={"app": "gated"}, volumes=EMPTY_DIR)]  # blocked counts
    plans = [plan_node(gpu_node(GPU_A, taints=[GPU_TAINT]), node_a, pdbs, PlanOptions(MANAGED)),
             plan_node(gpu_node(GPU_B, taints=[GPU_TAINT]), node_b, pdbs, PlanOptions(MANAGED))]
    blockers = pdb_blockers(plans)
    assert [(p.namespace, p.name) for p in blockers] == [
        ("a-ns", "never"), ("b-ns", "zz-now"), ("c-ns", "gated")]
    assert blockers[0].never_allows == "maxUnavailable is 0"
    assert blockers[1].never_allows is None and blockers[1].blocks_now


def test_pdb_blockers_none():
    plan = plan_node(gpu_node(taints=[GPU_TAINT]), [pod(labels=APP)],
                     [pdb("web", selector={"matchLabels": APP}, allowed=1)], PlanOptions(MANAGED))
    assert pdb_blockers([plan]) == []
    assert pdb_blockers([]) == []


def test_a_decision_carries_the_pods_resource_version_for_its_eviction():
    the_pod = pod()
    the_pod["metadata"]["resourceVersion"] = "4711"
    assert one_decision(the_pod).resource_version == "4711"
    assert one_decision(pod()).resource_version == ""
