"""The essentials trap: the planner's rules read only what they declare (core/pod_fields.py),
kube/essentials.py keeps all of that, and so the planner's case table decides the same on the
projection production plans use as on the whole pods the tests build."""

import dataclasses

import pytest

from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.core.planner import PlanOptions
from kubectl_gpuisolate.core.pod_fields import POD_FIELDS
from kubectl_gpuisolate.core.taints import effective_gpu_taints
from kubectl_gpuisolate.kube import essentials

from ..factories import GPU_TAINT, pod
from .pod_reads import recorded
from .test_planner import DECISION_CASES, MANAGED

STEPS = [planner.rule_context] + list(planner.RULES) + [planner.gated_or_move]


def unpack(kwargs):
    kwargs = dict(kwargs)
    taints = kwargs.pop("node_taints", (GPU_TAINT,))
    pdbs, missing = kwargs.pop("pdbs", ()), kwargs.pop("missing", frozenset())
    cluster, classes = kwargs.pop("cluster", None), kwargs.pop("runtime_classes", None)
    return (effective_gpu_taints(list(taints), MANAGED), pdbs, missing, cluster, classes,
            PlanOptions(MANAGED, **kwargs))


def reads(the_pod, kwargs):
    """{step name: the paths it read of the pod}."""
    taints, pdbs, missing, cluster, classes, options = unpack(kwargs)
    found = {}
    log = set()
    ctx = planner.rule_context(recorded(the_pod, "", log), taints, pdbs, options, missing, cluster,
                               runtime_classes=classes)
    found["rule_context"] = log
    for step in STEPS[1:]:
        log = set()
        watched = recorded(the_pod, "", log)
        step(watched, dataclasses.replace(ctx, pod=watched))
        found[step.__name__] = log
    return found


def declared(path, fields):
    """A read is declared if a declared field is it, is above it, or lies under it (the read
    on the way there); ``KEY{PREFIX}`` declares the keys at KEY and the values under PREFIX."""
    return any(_declared_by(path, d) for d in fields)


def _declared_by(path, field):
    if field.endswith("}"):
        base, prefix = field[:-1].split("{")
        return path in (base, base + ".*") or path.startswith(f"{base}.{prefix}") or \
            base.startswith((path + ".", path + "[]"))
    return path == field or path.startswith((field + ".", field + "[]")) or \
        field.startswith((path + ".", path + "[]"))


def values_at(obj, path):
    """The values at a dotted path ([] for each item of a list); keys may hold dots.
    ``KEY{PREFIX}``: of each mapping at KEY, the items whose key starts with PREFIX."""
    if path.endswith("}"):
        base, prefix = path[:-1].split("{")
        return [{k: v for k, v in found.items() if k.startswith(prefix)}
                for found in values_at(obj, base) if isinstance(found, dict)]
    if not path:
        return [obj]
    if isinstance(obj, list):
        assert path.startswith("[]"), path
        rest = path[2:]
        rest = rest[1:] if rest.startswith(".") else rest
        return [v for item in obj for v in values_at(item, rest)]
    if not isinstance(obj, dict):
        return []
    for key in sorted(obj, key=len, reverse=True):
        if path == key or path.startswith((key + ".", key + "[]")):
            rest = path[len(key):]
            return values_at(obj[key], rest[1:] if rest.startswith(".") else rest)
    return []


def test_every_step_of_the_planner_declares_what_it_reads():
    assert list(POD_FIELDS) == [step.__name__ for step in STEPS]


@pytest.mark.parametrize("the_pod, kwargs", [c.values[:2] for c in DECISION_CASES])
def test_each_rule_reads_only_what_it_declares(the_pod, kwargs):
    common = POD_FIELDS["rule_context"]
    for step, paths in reads(the_pod, kwargs).items():
        undeclared = sorted(p for p in paths if not declared(p, POD_FIELDS[step] + common))
        assert not undeclared, f"{step} reads {undeclared}: declare them in core/pod_fields.py"


@pytest.mark.parametrize("the_pod, kwargs", [c.values[:2] for c in DECISION_CASES])
def test_the_projection_keeps_every_declared_field(the_pod, kwargs):
    slim = essentials.pod(the_pod)
    for path in sorted({p for fields in POD_FIELDS.values() for p in fields}):
        assert values_at(slim, path) == values_at(the_pod, path), f"essentials.pod drops {path}"


@pytest.mark.parametrize("the_pod, kwargs", [c.values[:2] for c in DECISION_CASES])
def test_the_case_table_decides_the_same_on_the_projection(the_pod, kwargs):
    taints, pdbs, missing, cluster, classes, options = unpack(kwargs)
    whole = planner.decide(the_pod, taints, pdbs, options, missing, cluster, runtime_classes=classes)
    assert planner.decide(essentials.pod(the_pod), taints, pdbs, options, missing, cluster,
                          runtime_classes=classes) == whole


def test_a_read_of_a_field_the_projection_drops_is_caught():
    """The checks above can fail: a rule reading a container's image (essentials drops it) is
    undeclared, and declaring it is caught by the projection check."""
    the_pod = pod()
    the_pod["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/tritonserver:24.08-py3"
    log = set()
    watched = recorded(the_pod, "", log)
    [c.get("image") for c in watched["spec"]["containers"]]
    assert not declared("spec.containers[].image", POD_FIELDS["gpu_env"])
    assert "spec.containers[].image" in log
    assert values_at(essentials.pod(the_pod), "spec.containers[].image") != values_at(
        the_pod, "spec.containers[].image")


def test_a_prefix_field_declares_the_keys_and_only_the_values_under_it():
    field = "metadata.annotations{cdi.k8s.io/}"
    assert declared("metadata.annotations.*", [field])
    assert declared("metadata.annotations.cdi.k8s.io/gpu", [field]) and declared("metadata", [field])
    assert not declared("metadata.annotations.example.com/x", [field])
    the_pod = {"metadata": {"annotations": {"cdi.k8s.io/a": "v", "other": "w"}}}
    assert values_at(the_pod, field) == [{"cdi.k8s.io/a": "v"}]
