"""The guard's policy (core/guard.py): its CEL is written from the planner's tables, and its
Python twin (``rejects``) agrees with the planner on every pod shape of the planner's cases.
tests/e2e/test_guard.py holds the twin to the API server's own verdicts on the same shapes."""

import json
import re

import pytest

from kubectl_gpuisolate.core import gpu, guard, hidden_gpu
from kubectl_gpuisolate.core.decisions import LEAKS
from kubectl_gpuisolate.core.planner import is_daemonset_pod, is_mirror_pod
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import UsageError

from ..factories import GPU_A, GPU_B, TOLERATE_ALL, owner, pod
from .test_planner import DECISION_CASES, MANAGED

SPEC = guard.GuardSpec(taint=MANAGED, gpu_nodes=(GPU_A, GPU_B))
# Reasons for which the planner keeps a pod as a GPU user.
GPU_USERS = {"gpu-request", "gpu-shared", "gpu-mig", "accelerator", "gpu-fraction", "resource-claim",
             "gpu-env", "gpu-runtime", "gpu-cdi", "gpu-device-mount"}
NOT_JUDGED = {"daemonset", "daemonset-orphan", "mirror"}


def policy_text(spec=SPEC):
    return json.dumps(guard.policy(spec))


@pytest.mark.parametrize("literal", [
    *gpu.ACCELERATOR_RESOURCES, *gpu.ACCELERATOR_PREFIXES, *sorted(hidden_gpu.VISIBLE_DEVICES),
    *sorted(n for n in hidden_gpu.NO_DEVICES if n), hidden_gpu.CDI_PREFIX, hidden_gpu.NVIDIA_RUNTIME,
    *(prefix for prefix, _ in hidden_gpu.DEVICE_PATHS), *gpu.FRACTION_ANNOTATIONS,
    *(label.key for label in gpu.node_labels()), *(label.value for label in gpu.node_labels() if label.value),
    "resourceClaims", "kubernetes.io/config.mirror", "DaemonSet", GPU_A, GPU_B,
    MANAGED.key, MANAGED.value, MANAGED.effect])
def test_every_entry_of_the_planners_tables_is_in_the_policy(literal):
    assert json.dumps(literal)[1:-1] in policy_text()


def test_every_label_rule_names_its_labels():
    """The node rules are the guard's source for GPU node labels: each label rule declares them."""
    for rule in gpu.NODE_RULES:
        if rule is not gpu.accelerator_capacity:
            assert getattr(rule, "labels", ()), rule.__name__
            for label in rule.labels:
                node = {"metadata": {"name": "n", "labels": {label.key: label.value or "2"}}}
                assert gpu.node_signal(node).gpu, (rule.__name__, label)


def test_the_policy_and_binding():
    spec = guard.GuardSpec(MANAGED, (GPU_A,), ("my-nvidia",), ("kube-system", "monitoring", "kube-system"),
                           "Deny")
    policy, binding = guard.objects(spec)
    assert (policy["kind"], binding["kind"]) == (guard.POLICY, guard.BINDING)
    assert policy["metadata"] == binding["metadata"] == {"name": guard.NAME, "labels": guard.LABELS}
    assert policy["spec"]["failurePolicy"] == "Ignore"
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert [v["name"] for v in policy["spec"]["variables"]] == ["usesAccelerator", "toleratesGpuTaint",
                                                               "namesGpuNode"]
    assert '"my-nvidia"' in policy["spec"]["variables"][0]["expression"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["policyName"] == guard.NAME
    assert guard.exempt_of(binding) == ("kube-system", "monitoring")
    assert guard.mode_of(binding) == "Deny"
    assert [m["message"] for m in policy["spec"]["validations"]] == list(guard.messages(MANAGED))


def test_a_cel_string_escapes_quotes_and_backslashes():
    assert guard._str('a"b\\c') == '"a\\"b\\\\c"'


@pytest.mark.parametrize("text, mode", [("Warn", "Warn"), ("deny", "Deny"), ("AUDIT", "Audit")])
def test_modes(text, mode):
    assert guard.parse_mode(text) == mode


def test_an_unknown_mode_names_the_modes():
    with pytest.raises(UsageError, match=r"invalid --mode 'block': use Warn, Audit, Deny"):
        guard.parse_mode("block")


@pytest.mark.parametrize("version, refused", [("v1.29.9", True), ("v1.30.0", False), ("v1.33.5", False),
                                              ("v1.29.2-eks-1a2b3c", True), ("v1.30+", False),
                                              ("v2.0.0", False), ("garbage", False)])
def test_the_server_must_be_1_30_or_newer(version, refused):
    if refused:
        with pytest.raises(UsageError, match=rf"needs Kubernetes 1\.30 or newer .*the server is {version}$"):
            guard.check_server(version)
    else:
        guard.check_server(version)


def planner_cases():
    """(pod, runtime_classes, reason) of the planner's cases judged against the managed taint."""
    for case in DECISION_CASES:
        the_pod, kwargs, _, reason = case.values[:4]
        if "node_taints" in kwargs:
            continue
        yield pytest.param(the_pod, kwargs, reason, id=case.id)


@pytest.mark.parametrize("the_pod, kwargs, reason", list(planner_cases()))   # a list: collected twice
def test_the_guard_agrees_with_the_planner(the_pod, kwargs, reason):
    """A GPU user passes; a leak is rejected as tolerating; a DaemonSet or mirror pod passes; any
    other pod that names a GPU node (the cases' pods run on GPU A) is rejected as naming it."""
    classes = kwargs.get("runtime_classes") or {}
    spec = guard.GuardSpec(MANAGED, (GPU_A, GPU_B), tuple(n for n, h in classes.items() if "nvidia" in h),
                           exempt_namespaces=())
    found = guard.rejects(the_pod, spec)       # ``reason``: the planner's (test_planner checks it)
    if reason in GPU_USERS or reason in NOT_JUDGED:
        assert found is None
    elif reason in LEAKS:
        assert found == guard.TOLERATES
    elif is_daemonset_pod(the_pod) or is_mirror_pod(the_pod):       # a terminating one, say
        assert found is None
    elif not guard.uses_accelerator(the_pod, spec.gpu_runtime_classes):
        assert found in (guard.NAMES_NODE, guard.TOLERATES)
        assert found == (guard.TOLERATES if guard.tolerates_taint(the_pod, MANAGED) else guard.NAMES_NODE)


# What the guard takes for a GPU user that the planner does not: it cannot read a claim or a
# RuntimeClass, so any claim and any class named like NVIDIA's pass (docs/design.md, "The guard").
@pytest.mark.parametrize("the_pod", [
    pod(tolerations=TOLERATE_ALL, node_name=None, claims=[{"name": "nic", "resourceClaimName": "nic"}]),
    dict(pod(tolerations=TOLERATE_ALL, node_name=None), spec=dict(
        pod(tolerations=TOLERATE_ALL)["spec"], runtimeClassName="nvidia-lookalike", nodeName=None)),
], ids=["any-claim", "runtime-named-nvidia"])
def test_what_the_guard_cannot_read_passes(the_pod):
    assert guard.rejects(the_pod, SPEC) is None


def required(term):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}


@pytest.mark.parametrize("changes, expected", [
    ({}, None),
    ({"tolerations": TOLERATE_ALL}, guard.TOLERATES),
    ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, guard.TOLERATES),
    ({"tolerations": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}, guard.TOLERATES),
    ({"tolerations": [{"key": "nvidia.com/gpu", "value": "false", "effect": "NoSchedule"}]}, None),
    ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]}, None),
    ({"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]}, None),
    ({"nodeName": GPU_B}, guard.NAMES_NODE),
    ({"nodeName": "cpu-1"}, None),
    ({"nodeSelector": {"kubernetes.io/hostname": GPU_A}}, guard.NAMES_NODE),
    ({"nodeSelector": {"nvidia.com/gpu.present": "true"}}, guard.NAMES_NODE),
    ({"nodeSelector": {"nvidia.com/gpu.present": "false"}}, None),
    ({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}, guard.NAMES_NODE),
    ({"nodeSelector": {"karpenter.k8s.aws/instance-gpu-count": "0"}}, None),
    ({"nodeSelector": {"karpenter.k8s.aws/instance-gpu-count": "4"}}, guard.NAMES_NODE),
    (required({"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]}),
     guard.NAMES_NODE),
    (required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [GPU_A]}]}),
     guard.NAMES_NODE),
    (required({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": [GPU_A]}]}), None),
    (required({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": [GPU_A]}]}), None),
    (required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["cpu-1"]}]}), None),
    (required({"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                                     "values": ["false", "true"]}]}), guard.NAMES_NODE),
    (required({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                     "values": [GPU_B]}]}), guard.NAMES_NODE),
    (required({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                     "values": ["cpu-1"]}]}), None),
    (required({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}), None),
    (required({"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                                     "values": ["false"]}]}), None),
    ({"nodeSelector": {"kubernetes.io/hostname": "cpu-1"}}, None),
    ({"nodeSelector": {"app": GPU_A}}, None),
    (required({"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "NotIn",
                                     "values": ["true"]}]}), None),
    ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
        "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                             "values": [GPU_A]}]}}]}}}, None),
], ids=lambda v: "-".join(re.findall(r"[A-Za-z0-9]+", json.dumps(v)))[:60] if isinstance(v, dict)
    else str(v))
def test_what_the_guard_rejects(changes, expected):
    the_pod = pod(node_name=None, tolerations=[])
    the_pod["spec"].pop("nodeName")
    the_pod["spec"].update(changes)
    assert guard.rejects(the_pod, SPEC) == expected


@pytest.mark.parametrize("changes", [
    {"metadata": {"namespace": "kube-system"}},
    {"metadata": {"ownerReferences": [owner("DaemonSet", "agent")]}},
    {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}},
    {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
    {"spec": {"containers": [{"name": "c", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}},
], ids=["exempt-namespace", "daemonset", "mirror", "gpu-request", "gpu-env"])
def test_what_passes_even_tolerating_everything(changes):
    the_pod = pod(tolerations=TOLERATE_ALL)
    for section, values in changes.items():
        the_pod[section].update(values)
    assert guard.rejects(the_pod, SPEC) is None


def test_a_request_of_zero_gpus_is_no_gpu():
    the_pod = pod(tolerations=TOLERATE_ALL, limits={"nvidia.com/gpu": "0"})
    assert guard.rejects(the_pod, SPEC) == guard.TOLERATES


def test_status_reads_the_binding_back():
    binding = guard.binding(guard.GuardSpec(MANAGED, exempt_namespaces=("a", "kube-system"), mode="Warn"))
    state = guard.state_of(binding)
    assert (state.mode, state.exempt) == ("Warn", ("a", "kube-system"))
    assert guard.state_of(None).mode == guard.ABSENT
    assert guard.would_reject([("a", "x"), ("b", "y"), ("kube-system", "z")], state) == ["b/y"]


def test_another_taint_is_another_policy():
    other = Taint("example.com/accelerator", "", "NoExecute")
    text = policy_text(guard.GuardSpec(other))
    assert "example.com/accelerator" in text and "NoExecute" in text and "nvidia.com/gpu=true" not in text
