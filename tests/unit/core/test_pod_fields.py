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
    cluster = kwargs.pop("cluster", None)
    return effective_gpu_taints(list(taints), MANAGED), pdbs, missing, cluster, PlanOptions(MANAGED, **kwargs)


def reads(the_pod, kwargs):
    """{step name: the paths it read of the pod}."""
    taints, pdbs, missing, cluster, options = unpack(kwargs)
    found = {}
    log = set()
    ctx = planner.rule_context(recorded(the_pod, "", log), taints, pdbs, options, missing, cluster)
    found["rule_context"] = log
    for step in STEPS[1:]:
        log = set()
        watched = recorded(the_pod, "", log)
        step(watched, dataclasses.replace(ctx, pod=watched))
        found[step.__name__] = log
    return found


def declared(path, fields):
    """A read is declared if a declared field is it, is above it, or lies under it (the read
    on the way there)."""
    return any(path == d or path.startswith((d + ".", d + "[]")) or d.startswith((path + ".", path + "[]"))
               for d in fields)


def values_at(obj, path):
    """The values at a dotted path ([] for each item of a list); keys may hold dots."""
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
    taints, pdbs, missing, cluster, options = unpack(kwargs)
    whole = planner.decide(the_pod, taints, pdbs, options, missing, cluster)
    assert planner.decide(essentials.pod(the_pod), taints, pdbs, options, missing, cluster) == whole


def test_a_read_of_a_field_the_projection_drops_is_caught():
    """The checks above can fail: a rule reading env (essentials drops it) is undeclared, and
    declaring it is caught by the projection check."""
    the_pod = pod()
    the_pod["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    log = set()
    watched = recorded(the_pod, "", log)
    [c.get("env") for c in watched["spec"]["containers"]]
    assert not declared("spec.containers[].env", POD_FIELDS["gpu_request"])
    assert "spec.containers[].env" in log
    assert values_at(essentials.pod(the_pod), "spec.containers[].env") != values_at(
        the_pod, "spec.containers[].env")
