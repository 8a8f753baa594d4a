"""core/affinity.py: node selectors as the scheduler evaluates them (table-driven)."""

import pytest

from kubectl_gpuisolate.core import affinity

from ..factories import node


def expr(key, operator, *values):
    found = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


@pytest.mark.parametrize("expression, value, holds", [
    (expr("k", "In", "a", "b"), "a", True),
    (expr("k", "In", "a", "b"), "c", False),
    (expr("k", "In", "a"), None, False),
    (expr("k", "NotIn", "a"), "b", True),
    (expr("k", "NotIn", "a"), "a", False),
    (expr("k", "NotIn", "a"), None, True),
    (expr("k", "Exists"), "", True),
    (expr("k", "Exists"), None, False),
    (expr("k", "DoesNotExist"), None, True),
    (expr("k", "DoesNotExist"), "x", False),
    (expr("k", "Gt", "4"), "5", True),
    (expr("k", "Gt", "4"), "4", False),
    (expr("k", "Gt", "4"), "-5", False),
    (expr("k", "Lt", "4"), "3", True),
    (expr("k", "Lt", "4"), "4", False),
    (expr("k", "Lt", "-1"), "-2", True),
    (expr("k", "Gt", "4"), None, False),
    (expr("k", "Gt", "4"), "five", False),
    (expr("k", "Gt", "x"), "5", False),
    (expr("k", "Gt", "1", "2"), "5", False),
    (expr("k", "Gt"), "5", False),
    (expr("k", "Lt", "4"), None, False),
    (expr("k", "Unknown", "a"), "a", False),
    (expr("k", "In", 8), "8", True),
], ids=lambda v: repr(v))
def test_expression_holds(expression, value, holds):
    assert affinity.expression_holds(expression, value) is holds


N = node("n1", labels={"zone": "a", "gpus": "8", "disk": "ssd"})


@pytest.mark.parametrize("term, holds", [
    ({"matchExpressions": [expr("zone", "In", "a")]}, True),
    ({"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "hdd")]}, False),
    ({"matchExpressions": [expr("zone", "In", "a"), expr("gpus", "Gt", "4")]}, True),
    ({"matchFields": [expr("metadata.name", "In", "n1")]}, True),
    ({"matchFields": [expr("metadata.name", "In", "n2")]}, False),
    ({"matchFields": [expr("metadata.name", "NotIn", "n2")]}, True),
    ({"matchFields": [expr("metadata.name", "NotIn", "n1")]}, False),
    ({"matchFields": [expr("metadata.name", "Exists")]}, False),
    ({"matchFields": [expr("metadata.uid", "In", "n1")]}, False),
    ({"matchExpressions": [expr("zone", "In", "a")],
      "matchFields": [expr("metadata.name", "In", "n2")]}, False),
    ({"matchExpressions": [expr("zone", "In", "a")],
      "matchFields": [expr("metadata.name", "In", "n1")]}, True),
    ({}, False),
    ({"matchExpressions": [], "matchFields": []}, False),
])
def test_term_holds(term, holds):
    assert affinity.term_holds(term, N) is holds


@pytest.mark.parametrize("selector, holds", [
    (None, True),
    ({"nodeSelectorTerms": []}, False),
    ({}, False),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "b")]},
                            {"matchExpressions": [expr("disk", "In", "ssd")]}]}, True),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "b")]}, {}]}, False),
])
def test_selector_terms_are_ored(selector, holds):
    assert affinity.selector_holds(selector, N) is holds


@pytest.mark.parametrize("selector, holds", [
    (None, True), ({}, True), ({"zone": "a"}, True), ({"zone": "a", "disk": "ssd"}, True),
    ({"zone": "a", "disk": "hdd"}, False), ({"missing": ""}, False),
])
def test_node_selector_needs_every_pair(selector, holds):
    assert affinity.node_selector_holds(selector, N) is holds


def test_a_node_without_labels_or_metadata():
    assert affinity.node_labels({}) == {}
    assert affinity.node_name({}) == ""
    assert affinity.selector_holds({"nodeSelectorTerms": [{"matchExpressions": [
        expr("zone", "DoesNotExist")]}]}, {}) is True


def test_required_affinity_and_pv_affinity():
    required = {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "a")]}]}
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required,
                                          "preferredDuringSchedulingIgnoredDuringExecution": []}}}
    assert affinity.required_affinity(spec) == required
    assert affinity.required_affinity({}) is None
    assert affinity.required_affinity({"affinity": {"podAntiAffinity": {}}}) is None
    assert affinity.pv_affinity({"spec": {"nodeAffinity": {"required": required}}}) == required
    assert affinity.pv_affinity({"spec": {}}) is None
    assert affinity.pv_affinity({}) is None


def test_a_pv_affinity_skips_match_fields_as_the_scheduler_does():
    # kube-scheduler's VolumeBinding matches a PV's nodeAffinity on the node's labels alone, and
    # a node without fields skips matchFields (found by tests/e2e/test_landing_oracle.py).
    ssd = node("n1", labels={"disk": "ssd"})
    fields_in = {"matchExpressions": [expr("disk", "Exists")],
                 "matchFields": [expr("metadata.name", "In", "other")]}
    fields_not_in = {"matchFields": [expr("metadata.name", "NotIn", "n1")]}
    for term in (fields_in, fields_not_in):
        pv = {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}
        assert affinity.pv_affinity_holds(pv, ssd) is True
        assert affinity.selector_holds({"nodeSelectorTerms": [term]}, ssd) is False
    hdd_only = {"matchExpressions": [expr("disk", "In", "hdd")],
                "matchFields": [expr("metadata.name", "In", "n1")]}
    for term in (hdd_only, {}):
        pv = {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}
        assert affinity.pv_affinity_holds(pv, ssd) is False
    assert affinity.pv_affinity_holds({"spec": {}}, ssd) is True


@pytest.mark.parametrize("selector, text", [
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("k", "In", "a", "b")]}]}, "k In [a, b]"),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("k", "NotIn", "a")]}]}, "k NotIn [a]"),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Exists"), expr("j", "DoesNotExist")]}]},
     "k Exists, j DoesNotExist"),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Gt", "3")]}]}, "k Gt 3"),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Lt")]}]}, "k Lt"),
    ({"nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", "n1")]}]},
     "metadata.name In [n1]"),
    ({"nodeSelectorTerms": [{"matchExpressions": [expr("a", "Exists")]},
                            {"matchExpressions": [expr("b", "Exists")]}]}, "(a Exists) or (b Exists)"),
    ({"nodeSelectorTerms": [{}]}, "an empty term"),
    ({"nodeSelectorTerms": []}, "no terms"),
])
def test_describe_selector(selector, text):
    assert affinity.describe_selector(selector) == text


def test_selector_keys_and_values():
    selector = {"nodeSelectorTerms": [
        {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "a", "b"), expr("x", "Exists")]},
        {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "b", "c"),
                              expr("topology.kubernetes.io/zone", "NotIn", "d")]}]}
    assert affinity.selector_keys(selector) == ["topology.kubernetes.io/zone", "x",
                                                "topology.kubernetes.io/zone",
                                                "topology.kubernetes.io/zone"]
    assert affinity.selector_values(selector, lambda k: k.endswith("/zone")) == ["a", "b", "c"]
    assert affinity.selector_values(selector, lambda k: k == "x") == []
    assert affinity.selector_values(None, lambda k: True) == []
    assert affinity.selector_keys(None) == []


# -- expressions missing their fields: named empty, never "None" -----------------------------------
def test_an_expression_without_key_or_operator_is_described_empty():
    assert affinity.describe_expression({}) == "  []"
    assert affinity.describe_expression({"operator": "Exists"}) == " Exists"
    assert affinity.describe_expression({"key": "k"}) == "k  []"


def test_the_keys_and_values_of_expressions_without_a_key():
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"operator": "In", "values": ["a"]}]}]}
    assert affinity.selector_keys(selector) == [""]
    assert affinity.selector_values(selector, lambda key: key == "") == ["a"]
