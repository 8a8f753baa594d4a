"""core/planner.py's RULES against docs/design.md's table "The planner's decisions".

The table is the rule chain's documentation: one row per rule, in order, then the final step.  This test
parses it, so a rule added, removed or reordered in code but not in the table (or the other way) fails."""

import pytest

from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.core.planner import PlanOptions
from kubectl_gpuisolate.core.taints import effective_gpu_taints

from ..design_tables import code_names, design_rows
from ..factories import GPU_TAINT, gpu_node
from .test_planner import CLUSTER, DECISION_CASES, GPU_ONLY_CLUSTER, MANAGED

HEADING = "## The planner's decisions"
FINAL = "gated_or_move"


ROWS = design_rows(HEADING)


def row_rule(row):
    names = code_names(row["rule"])
    assert len(names) == 1, row
    return names[0]


def test_the_table_names_every_rule_in_order_then_the_final_step():
    rules = [row_rule(r) for r in ROWS]
    n = len(planner.RULES)
    assert rules[:n] == [rule.__name__ for rule in planner.RULES]
    assert rules[n:] and set(rules[n:]) == {FINAL}


def test_every_named_rule_is_the_planners_function():
    for row in ROWS:
        rule = getattr(planner, row_rule(row))
        assert callable(rule)
        assert rule in planner.RULES or rule is planner.gated_or_move


def documented():
    """{(action, reason): rule name} from the table."""
    found = {}
    for row in ROWS:
        for reason in code_names(row["reason"]):
            key = (row["action"], reason)
            assert key not in found, f"{key} is in two rows"
            found[key] = row_rule(row)
    return found


def deciding_rule(the_pod, node_taints, pdbs, missing, options, cluster=None, runtime_classes=None):
    """The name of the step that decides the pod, found by running the chain by hand."""
    ctx = planner.rule_context(the_pod, effective_gpu_taints(list(node_taints), options.managed_taint),
                               pdbs, options, missing, cluster, runtime_classes=runtime_classes)
    for rule in planner.RULES:
        if rule(the_pod, ctx) is not None:
            return rule.__name__, ctx
    return FINAL, ctx


@pytest.mark.parametrize("the_pod, kwargs, action, reason, flags, warning, pdb_names, message",
                         DECISION_CASES)
def test_each_decision_comes_from_the_row_that_documents_it(the_pod, kwargs, action, reason, flags,
                                                            warning, pdb_names, message):
    kwargs = dict(kwargs)
    node_taints = kwargs.pop("node_taints", (GPU_TAINT,))
    pdbs = kwargs.pop("pdbs", ())
    missing = kwargs.pop("missing", frozenset())
    cluster = kwargs.pop("cluster", None)
    runtime_classes = kwargs.pop("runtime_classes", None)
    options = PlanOptions(MANAGED, **kwargs)
    name, ctx = deciding_rule(the_pod, node_taints, pdbs, missing, options, cluster, runtime_classes)
    assert documented().get((action, reason)) == name
    # decide is exactly this chain.
    decision = planner.decide(the_pod, ctx.gpu_taints, pdbs, options, missing, cluster,
                              runtime_classes=runtime_classes)
    assert (decision.action, decision.reason) == (action, reason)


def test_every_documented_decision_has_a_case():
    seen = {(c.values[2], c.values[3]) for c in DECISION_CASES}
    assert set(documented()) <= seen


@pytest.mark.parametrize("the_pod, kwargs, action, reason, flags, warning, pdb_names, message",
                         DECISION_CASES)
@pytest.mark.parametrize("cluster", [CLUSTER, GPU_ONLY_CLUSTER], ids=["cpu-workers", "gpu-only"])
def test_a_plan_made_without_the_cluster_settles_only_what_the_landing_check_cannot_change(
        the_pod, kwargs, action, reason, flags, warning, pdb_names, message, cluster):
    """kube.gather plans once without the cluster, then decides only the rest again with it."""
    kwargs = dict(kwargs)
    kwargs.pop("cluster", None)
    node = gpu_node(taints=list(kwargs.pop("node_taints", (GPU_TAINT,))))
    pdbs, missing = list(kwargs.pop("pdbs", ())), kwargs.pop("missing", frozenset())
    classes = kwargs.pop("runtime_classes", None)
    options = PlanOptions(MANAGED, **kwargs)
    first = planner.plan_node(node, [the_pod], pdbs, options, missing, runtime_classes=classes)
    again = planner.plan_node(node, [the_pod], pdbs, options, missing, cluster, settled=first.settled,
                              runtime_classes=classes)
    assert again.decisions == planner.plan_node(node, [the_pod], pdbs, options, missing, cluster,
                                                runtime_classes=classes).decisions
    settled = bool(first.settled)
    assert settled is not (first.decisions[0].action in (planner.MOVE, planner.BLOCKED)
                           and bool(first.decisions[0].owner))
    if settled:
        assert again.decisions[0] is first.decisions[0]
