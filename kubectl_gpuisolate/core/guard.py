"""The guard: a ValidatingAdmissionPolicy and its binding that keep the GPU nodes isolated after
an evacuation, by rejecting (or warning about) pods that use no accelerator yet tolerate the GPU
taint or name a GPU node.

Pure.  The policy's CEL is written from the planner's own tables (core/gpu.py's accelerator
resources and node labels, core/hidden_gpu.py's forms, the KAI fraction annotations, the taint
matching of core/taints.py), so the two cannot drift apart; ``rejects`` is the same judgement in
Python, which tests/e2e/test_guard.py holds to the API server's verdicts and the unit tests to
the planner's.  What passes: pods that use an accelerator in any form, DaemonSet and mirror
pods, and the exempt namespaces (the binding's namespaceSelector).  docs/design.md, "The guard",
is the contract.
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import UsageError
from . import gpu, hidden_gpu
from .gpu import Obj
from .planner import is_daemonset_pod, is_mirror_pod
from .taints import Taint, tolerates

NAME = "gpuisolate-guard"            # the policy's and the binding's name
GROUP = "admissionregistration.k8s.io"
API_VERSION = f"{GROUP}/v1"
POLICY, BINDING = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
PLURALS = {POLICY: "validatingadmissionpolicies", BINDING: "validatingadmissionpolicybindings"}
MODES = ("Warn", "Audit", "Deny")    # the binding's validationActions, one at a time
DEFAULT_MODE = "Warn"                # nothing breaks on day one
MIN_SERVER = (1, 30)                 # admissionregistration.k8s.io/v1 serves the policies
LABELS = {"app.kubernetes.io/managed-by": "kubectl-gpuisolate", "app.kubernetes.io/component": "guard"}
LABEL_SELECTOR = ",".join(f"{key}={value}" for key, value in LABELS.items())
ALWAYS_EXEMPT = ("kube-system",)
# Where the GPU Operator runs (upstream's Helm default; OpenShift's OperatorHub install).
GPU_OPERATOR_NAMESPACES = ("gpu-operator", "nvidia-gpu-operator")
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
HOSTNAME_LABEL = "kubernetes.io/hostname"
FRACTION_ANNOTATIONS = gpu.FRACTION_ANNOTATIONS

TOLERATES = "tolerates"              # the two reasons a pod is rejected
NAMES_NODE = "names-gpu-node"


@dataclass(frozen=True)
class GuardSpec:
    """What the guard is written from: the GPU taint, the GPU nodes' names (for spec.nodeName and
    the hostname label), the RuntimeClasses with an NVIDIA handler, the exempt namespaces, the mode."""
    taint: Taint
    gpu_nodes: Tuple[str, ...] = ()
    gpu_runtime_classes: Tuple[str, ...] = ()
    exempt_namespaces: Tuple[str, ...] = ALWAYS_EXEMPT
    mode: str = DEFAULT_MODE


def parse_mode(text: str) -> str:
    for mode in MODES:
        if text.lower() == mode.lower():
            return mode
    raise UsageError(f"invalid --mode {text!r}: use {', '.join(MODES)}")


def check_server(git_version: str) -> None:
    """A one-line error for a server older than MIN_SERVER ("v1.29.3")."""
    parts = git_version.lstrip("v").split(".")
    try:
        found = (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0))
    except (IndexError, ValueError):
        return            # an unreadable version: the write itself will say what is missing
    if found < MIN_SERVER:
        raise UsageError(f"the guard needs Kubernetes {MIN_SERVER[0]}.{MIN_SERVER[1]} or newer "
                         f"({API_VERSION} {POLICY}); the server is {git_version}")


def messages(taint: Taint) -> Tuple[str, str]:
    """(why a tolerating pod is rejected, why a pod naming a GPU node is)."""
    fix = ("ask for a GPU, or exempt the namespace with 'kubectl gpuisolate guard "
           "--exempt-namespace'")
    return (f"this pod tolerates the GPU taint {taint} but uses no GPU, so it could run on a "
            f"GPU node: remove the toleration, or {fix}",
            "this pod names a GPU node (spec.nodeName, or a required nodeSelector or node affinity "
            f"on GPU nodes) but uses no GPU: schedule it elsewhere, or {fix}")


# -- CEL, written from the tables --------------------------------------------------------------
def _str(text: str) -> str:
    """A CEL string literal (names, keys and prefixes are printable ASCII: two escapes do)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _list(items: Sequence[str]) -> str:
    return "[" + ", ".join(map(_str, items)) + "]"


def _any(parts: Sequence[str]) -> str:
    return "(" + " || ".join(parts) + ")" if parts else "false"


def _each_container(kinds: Sequence[str], body: str) -> str:
    return _any([f"(has(object.spec.{kind}) && object.spec.{kind}.exists(c, {body}))" for kind in kinds])


def _accelerator_key(key: str) -> str:
    return _any([f"{key} in {_list(gpu.ACCELERATOR_RESOURCES)}"]
                + [f"{key}.startsWith({_str(prefix)})" for prefix in gpu.ACCELERATOR_PREFIXES])


def _resources_cel() -> str:
    sections = [f"(has(c.resources.{s}) && c.resources.{s}.exists(k, {_accelerator_key('k')} && "
                f"string(c.resources.{s}[k]) != '0'))" for s in ("requests", "limits")]
    return _each_container(("containers", "initContainers"), f"has(c.resources) && {_any(sections)}")


def _env_cel() -> str:
    value = "(has(e.value) ? e.value : '').trim().lowerAscii()"
    entry = (f"e.name in {_list(sorted(hidden_gpu.VISIBLE_DEVICES))} && (has(e.valueFrom) || "
             f"!({value} in {_list(sorted(hidden_gpu.NO_DEVICES))}))")
    return _each_container(hidden_gpu.CONTAINER_KINDS, f"has(c.env) && c.env.exists(e, {entry})")


def _device_path(path: str) -> str:
    parts = []
    for prefix, _ in hidden_gpu.DEVICE_PATHS:
        if prefix.endswith("/"):
            parts.append(f"{path} == {_str(prefix[:-1])} || {path}.startsWith({_str(prefix)})")
        else:
            parts.append(f"{path}.startsWith({_str(prefix)})")
    return _any(parts)


def uses_accelerator_cel(gpu_runtime_classes: Sequence[str]) -> str:
    annotations = "object.metadata.annotations"
    runtime = "object.spec.runtimeClassName"
    return " || ".join([
        _resources_cel(),
        "(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)",
        f"(has({annotations}) && {annotations}.exists(k, k.startsWith({_str(hidden_gpu.CDI_PREFIX)}) || "
        f"(k in {_list(FRACTION_ANNOTATIONS)} && {annotations}[k] != '')))",
        _env_cel(),
        f"(has({runtime}) && ({runtime}.lowerAscii().contains({_str(hidden_gpu.NVIDIA_RUNTIME)}) || "
        f"{runtime} in {_list(sorted(gpu_runtime_classes))}))",
        "(has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.hostPath) && "
        f"{_device_path('v.hostPath.path')}))",
    ])


def tolerates_cel(taint: Taint) -> str:
    """core/taints.tolerates, for one toleration ``t`` of the pod."""
    effect = f"(!has(t.effect) || t.effect == '' || t.effect == {_str(taint.effect)})"
    key = f"(!has(t.key) || t.key == '' || t.key == {_str(taint.key)})"
    exists = "(has(t.operator) && t.operator == 'Exists')"
    equal = (f"((!has(t.operator) || t.operator in ['', 'Equal']) && "
             f"(has(t.value) ? t.value : '') == {_str(taint.value)})")
    return (f"has(object.spec.tolerations) && object.spec.tolerations.exists(t, {effect} && {key} && "
            f"({exists} || {equal}))")


def _label_selects(key: str, value: str, gpu_nodes: Sequence[str]) -> str:
    parts = [f"({key} == {_str(HOSTNAME_LABEL)} && {value} in {_list(gpu_nodes)})"]
    for label in gpu.node_labels():
        if label.count:
            parts.append(f"({key} == {_str(label.key)} && {value} != '0')")
        elif label.value:
            parts.append(f"({key} == {_str(label.key)} && {value} == {_str(label.value)})")
        else:
            parts.append(f"{key} == {_str(label.key)}")
    return _any(parts)


def names_gpu_node_cel(gpu_nodes: Sequence[str]) -> str:
    selector = "object.spec.nodeSelector"
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    label_keys = _list(sorted({label.key for label in gpu.node_labels()}))
    expression = (f"(e.operator == 'In' && has(e.values) && e.values.exists(v, "
                  f"{_label_selects('e.key', 'v', gpu_nodes)})) || "
                  f"(e.operator == 'Exists' && e.key in {label_keys})")
    field = (f"f.key == 'metadata.name' && f.operator == 'In' && has(f.values) && "
             f"f.values.exists(v, v in {_list(gpu_nodes)})")
    term = (f"(has(term.matchExpressions) && term.matchExpressions.exists(e, {expression})) || "
            f"(has(term.matchFields) && term.matchFields.exists(f, {field}))")
    return " || ".join([
        f"(has(object.spec.nodeName) && object.spec.nodeName in {_list(gpu_nodes)})",
        f"(has({selector}) && {selector}.exists(k, {_label_selects('k', f'{selector}[k]', gpu_nodes)}))",
        f"(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"{required}.nodeSelectorTerms.exists(term, {term}))",
    ])


# The pods the policy does not judge (matchConditions): DaemonSet pods (their controller is an
# apps/v1 DaemonSet, as the planner reads it), mirror pods, and an UPDATE that leaves the
# tolerations as they were (a running pod's labels may change without it being judged again).
MATCH_CONDITIONS = (
    ("not-a-daemonset-pod", "!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences"
     ".exists(r, r.kind == 'DaemonSet' && r.apiVersion == 'apps/v1' && has(r.controller) && r.controller)"),
    ("not-a-mirror-pod", "!has(object.metadata.annotations) || "
     "!('kubernetes.io/config.mirror' in object.metadata.annotations)"),
    ("created-or-tolerations-changed", "request.operation == 'CREATE' || "
     "(has(object.spec.tolerations) ? object.spec.tolerations : []) != "
     "(has(oldObject.spec.tolerations) ? oldObject.spec.tolerations : [])"),
)


def _metadata(name: str = NAME) -> Obj:
    return {"name": name, "labels": dict(LABELS)}


def policy(spec: GuardSpec) -> Obj:
    tolerates_message, node_message = messages(spec.taint)
    return {
        "apiVersion": API_VERSION, "kind": POLICY, "metadata": _metadata(),
        "spec": {
            # An error in the policy admits the pod: the guard never blocks pods by its own fault.
            "failurePolicy": "Ignore",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["pods"]}]},
            "matchConditions": [{"name": name, "expression": expression}
                                for name, expression in MATCH_CONDITIONS],
            "variables": [
                {"name": "usesAccelerator", "expression": uses_accelerator_cel(spec.gpu_runtime_classes)},
                {"name": "toleratesGpuTaint", "expression": tolerates_cel(spec.taint)},
                {"name": "namesGpuNode", "expression": names_gpu_node_cel(spec.gpu_nodes)},
            ],
            "validations": [
                {"expression": "variables.usesAccelerator || !variables.toleratesGpuTaint",
                 "message": tolerates_message, "reason": "Forbidden"},
                {"expression": "variables.usesAccelerator || !variables.namesGpuNode",
                 "message": node_message, "reason": "Forbidden"},
            ],
        },
    }


def binding(spec: GuardSpec) -> Obj:
    return {
        "apiVersion": API_VERSION, "kind": BINDING, "metadata": _metadata(),
        "spec": {"policyName": NAME, "validationActions": [spec.mode],
                 "matchResources": {"namespaceSelector": {"matchExpressions": [
                     {"key": NAMESPACE_LABEL, "operator": "NotIn",
                      "values": sorted(set(spec.exempt_namespaces))}]}}},
    }


def objects(spec: GuardSpec) -> List[Obj]:
    """What ``guard`` writes, in the order it writes them (the policy before its binding)."""
    return [policy(spec), binding(spec)]


# -- reading a written guard back --------------------------------------------------------------
def mode_of(written_binding: Obj) -> str:
    return ",".join((written_binding.get("spec") or {}).get("validationActions") or ()) or "none"


def exempt_of(written_binding: Obj) -> Tuple[str, ...]:
    selector = (((written_binding.get("spec") or {}).get("matchResources") or {})
                .get("namespaceSelector") or {})
    return tuple(value for expression in selector.get("matchExpressions") or ()
                 if expression.get("key") == NAMESPACE_LABEL and expression.get("operator") == "NotIn"
                 for value in expression.get("values") or ())


# -- the same judgement in Python --------------------------------------------------------------
def _label_selects_py(key: str, value: str, gpu_nodes: Sequence[str]) -> bool:
    if key == HOSTNAME_LABEL and value in gpu_nodes:
        return True
    for label in gpu.node_labels():
        if key == label.key and (value != "0" if label.count else value == label.value if label.value
                                 else True):
            return True
    return False


def uses_accelerator(pod: Obj, gpu_runtime_classes: Sequence[str] = ()) -> bool:
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    runtime = spec.get("runtimeClassName") or ""
    requested = any(gpu.is_gpu_resource(name) and str(value) != "0"
                    for container in (spec.get("containers") or []) + (spec.get("initContainers") or [])
                    for section in ("requests", "limits")
                    for name, value in ((container.get("resources") or {}).get(section) or {}).items())
    return (requested or bool(spec.get("resourceClaims"))
            or any(k.startswith(hidden_gpu.CDI_PREFIX) or (k in FRACTION_ANNOTATIONS and v != "")
                   for k, v in annotations.items())
            or bool(hidden_gpu.env_uses(pod))
            or (bool(runtime) and (hidden_gpu.NVIDIA_RUNTIME in runtime.lower()
                                   or runtime in gpu_runtime_classes))
            or bool(hidden_gpu.device_mount_uses(pod)))


def tolerates_taint(pod: Obj, taint: Taint) -> bool:
    return any(tolerates(t, taint.to_api()) for t in (pod.get("spec") or {}).get("tolerations") or ())


def names_gpu_node(pod: Obj, gpu_nodes: Sequence[str]) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeName") and spec["nodeName"] in gpu_nodes:
        return True
    if any(_label_selects_py(k, v, gpu_nodes) for k, v in (spec.get("nodeSelector") or {}).items()):
        return True
    keys = {label.key for label in gpu.node_labels()}
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for e in term.get("matchExpressions") or ():
            if e.get("operator") == "In" and any(_label_selects_py(e.get("key", ""), v, gpu_nodes)
                                                 for v in e.get("values") or ()):
                return True
            if e.get("operator") == "Exists" and e.get("key") in keys:
                return True
        for f in term.get("matchFields") or ():
            if (f.get("key") == "metadata.name" and f.get("operator") == "In"
                    and any(v in gpu_nodes for v in f.get("values") or ())):
                return True
    return False


def rejects(pod: Obj, spec: GuardSpec) -> Optional[str]:
    """Why the guard rejects the pod on CREATE (TOLERATES or NAMES_NODE), or None: it passes."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    if namespace in spec.exempt_namespaces or is_daemonset_pod(pod) or is_mirror_pod(pod):
        return None
    if uses_accelerator(pod, spec.gpu_runtime_classes):
        return None
    if tolerates_taint(pod, spec.taint):
        return TOLERATES
    if names_gpu_node(pod, spec.gpu_nodes):
        return NAMES_NODE
    return None


# -- what status says of it --------------------------------------------------------------------
ABSENT, UNKNOWN = "absent", "unknown"


@dataclass(frozen=True)
class GuardState:
    """The guard as status finds it: ``mode`` is ABSENT, UNKNOWN (``why`` says why) or the
    binding's validationActions; ``exempt`` its exempt namespaces (the defaults when absent)."""
    mode: str
    exempt: Tuple[str, ...] = ALWAYS_EXEMPT + GPU_OPERATOR_NAMESPACES
    why: str = ""


def state_of(written_binding: Optional[Obj]) -> GuardState:
    if written_binding is None:
        return GuardState(ABSENT)
    return GuardState(mode_of(written_binding), exempt_of(written_binding))


def would_reject(leaks: Sequence[Tuple[str, str]], state: GuardState) -> List[str]:
    """``namespace/name`` of the running isolation leaks (the planner's) outside the exempt
    namespaces: the pods the guard would have rejected had it been there when they were made."""
    return [f"{namespace}/{name}" for namespace, name in leaks if namespace not in state.exempt]
