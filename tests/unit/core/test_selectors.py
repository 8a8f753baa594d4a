"""core/selectors.py: the -l syntax and API LabelSelectors (as PDBs use them)."""

import pytest

from kubectl_gpuisolate.core.selectors import matches, matches_string, parse
from kubectl_gpuisolate.errors import UsageError
from kubectl_gpuisolate.exits import EXIT_USAGE


# Valid/invalid verdicts agree with k8s.io/apimachinery v0.33 labels.Parse, except the empty
# selector, which parse() rejects on purpose (labels.Parse accepts it as "everything").
@pytest.mark.parametrize("text, expected", [
    ("a=b", [("a", "In", ["b"])]),
    ("a==b", [("a", "In", ["b"])]),
    ("a!=b", [("a", "NotIn", ["b"])]),
    ("a", [("a", "Exists", [])]),
    ("!a", [("a", "DoesNotExist", [])]),
    ("a in (x,y)", [("a", "In", ["x", "y"])]),
    ("a in (x, y)", [("a", "In", ["x", "y"])]),
    ("a notin (x)", [("a", "NotIn", ["x"])]),
    ("nvidia.com/gpu.present=true", [("nvidia.com/gpu.present", "In", ["true"])]),
    ("a=", [("a", "In", [""])]),
    (" a = b ", [("a", "In", ["b"])]),
    ("a>1", [("a", "Gt", ["1"])]),
    ("a<10", [("a", "Lt", ["10"])]),
    ("a=b,c!=d", [("a", "In", ["b"]), ("c", "NotIn", ["d"])]),
    ("a in (x,y),!b,c", [("a", "In", ["x", "y"]), ("b", "DoesNotExist", []), ("c", "Exists", [])]),
    ("nvidia.com/gpu.present=true,pool notin (cpu,infra)",
     [("nvidia.com/gpu.present", "In", ["true"]), ("pool", "NotIn", ["cpu", "infra"])]),
    ("node-role.kubernetes.io/worker", [("node-role.kubernetes.io/worker", "Exists", [])]),
    ("a in(x)", [("a", "In", ["x"])]),
    ("a notin(x,y),b", [("a", "NotIn", ["x", "y"]), ("b", "Exists", [])]),
    ("a in ( x , y )", [("a", "In", ["x", "y"])]),
    ("a in (x,)", [("a", "In", ["x", ""])]),
    ("a!=", [("a", "NotIn", [""])]),
    ("!  a", [("a", "DoesNotExist", [])]),
    ("a >1", [("a", "Gt", ["1"])]),
], ids=["eq", "double-eq", "not-eq", "exists", "not-exists", "in", "in-spaces", "notin",
        "gpu-present", "empty-value", "spaces", "gt", "lt", "two", "set-and-exists",
        "gpu-and-notin", "role-exists", "in-no-space-before-paren",
        "notin-no-space-before-paren", "set-inner-spaces", "set-trailing-comma",
        "not-eq-empty", "bang-space", "gt-space"])
def test_parse_valid(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "a=b=c", "=b", "a in x", "!a=b", "!a in (x)", "a$b=c", "a b", "a,", ",", "a!b",
    "a=b c", "Bad.Prefix/a=b", "a=-x", "a in (x,-y)", "a<x", f"{'k' * 64}=v", "a=(b)", "a in (x",
    "ain(x)", "a,,b", "a in (x y)", "!a in(x)",
], ids=["empty", "blank", "a=b=c", "no-key", "in-without-parens", "not-with-value",
        "not-with-in", "bad-key-char", "two-words", "trailing-comma", "comma-only", "bang-inside",
        "value-with-space", "bad-prefix", "bad-value", "bad-set-value", "lt-not-integer",
        "64-char-key", "value-parens", "unclosed-set", "in-glued-to-key", "empty-requirement",
        "set-values-without-comma", "not-with-in-no-space"])
def test_parse_invalid(text):
    with pytest.raises(UsageError) as info:
        parse(text)
    assert info.value.exit_code == EXIT_USAGE
    assert str(info.value).startswith("invalid selector")
    assert "\n" not in str(info.value)


def test_parse_empty_explains_the_syntax():
    with pytest.raises(UsageError) as info:
        parse("")
    assert str(info.value) == ("invalid selector '': give KEY=VALUE, KEY!=VALUE, KEY, !KEY "
                               "or KEY in (A,B)")


LABELS = {"nvidia.com/gpu.present": "true", "pool": "gpu", "count": "4"}


@pytest.mark.parametrize("text, labels, expected", [
    ("nvidia.com/gpu.present=true", LABELS, True),
    ("nvidia.com/gpu.present=true", {"nvidia.com/gpu.present": "false"}, False),
    ("nvidia.com/gpu.present=true", {}, False),
    ("nvidia.com/gpu.present=true", None, False),
    ("pool!=cpu", LABELS, True),
    ("pool!=gpu", LABELS, False),
    ("pool!=gpu", {}, True),
    ("pool", LABELS, True),
    ("pool", {}, False),
    ("!pool", LABELS, False),
    ("!pool", {}, True),
    ("pool in (cpu,gpu)", LABELS, True),
    ("pool in (cpu,infra)", LABELS, False),
    ("pool in (cpu,gpu)", {}, False),
    ("pool notin (cpu)", LABELS, True),
    ("pool notin (gpu)", LABELS, False),
    ("pool notin (gpu)", {}, True),
    ("count>3", LABELS, True),
    ("count>4", LABELS, False),
    ("count<5", LABELS, True),
    ("count<5", {"count": "many"}, False),
    ("count<5", {}, False),
    ("nvidia.com/gpu.present=true,pool=gpu", LABELS, True),
    ("nvidia.com/gpu.present=true,pool=cpu", LABELS, False),
], ids=["eq-match", "eq-other-value", "eq-missing", "eq-labels-none", "neq-match", "neq-same",
        "neq-missing", "exists", "exists-missing", "not-exists-present", "not-exists-missing",
        "in-match", "in-miss", "in-missing", "notin-match", "notin-miss", "notin-missing",
        "gt-match", "gt-equal", "lt-match", "lt-not-integer", "lt-missing", "and-match",
        "and-one-fails"])
def test_matches_string(text, labels, expected):
    assert matches_string(parse(text), labels) is expected


def test_matches_string_no_requirements_matches_everything():
    assert matches_string([], {"a": "b"}) is True
    assert matches_string([], None) is True


POD_LABELS = {"app": "nai-db", "tier": "db"}


@pytest.mark.parametrize("selector, labels, expected", [
    (None, POD_LABELS, False),
    (None, {}, False),
    ({}, POD_LABELS, True),
    ({}, {}, True),
    ({}, None, True),
    ({"matchLabels": {"app": "nai-db"}}, POD_LABELS, True),
    ({"matchLabels": {"app": "nai-db", "tier": "db"}}, POD_LABELS, True),
    ({"matchLabels": {"app": "nai-api"}}, POD_LABELS, False),
    ({"matchLabels": {"app": "nai-db", "tier": "web"}}, POD_LABELS, False),
    ({"matchLabels": {"app": "nai-db"}}, {}, False),
    ({"matchLabels": {}}, POD_LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["nai-db", "x"]}]},
     POD_LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}, POD_LABELS, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]},
     POD_LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["nai-db"]}]},
     POD_LABELS, False),
    ({"matchExpressions": [{"key": "gone", "operator": "NotIn", "values": ["x"]}]},
     POD_LABELS, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, POD_LABELS, True),
    ({"matchExpressions": [{"key": "gone", "operator": "Exists"}]}, POD_LABELS, False),
    ({"matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}]}, POD_LABELS, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, POD_LABELS, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Bogus", "values": ["db"]}]},
     POD_LABELS, False),
    ({"matchLabels": {"app": "nai-db"},
      "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
     POD_LABELS, False),
    ({"matchLabels": {"app": "nai-db"},
      "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]},
                           {"key": "gone", "operator": "DoesNotExist"}]}, POD_LABELS, True),
], ids=["none-matches-nothing", "none-empty-labels", "empty-matches-all", "empty-empty-labels",
        "empty-labels-none", "match-labels", "match-labels-two", "match-labels-other-value",
        "match-labels-one-fails", "match-labels-missing", "match-labels-empty", "expr-in",
        "expr-in-miss", "expr-notin", "expr-notin-miss", "expr-notin-missing-key", "expr-exists",
        "expr-exists-miss", "expr-doesnotexist", "expr-doesnotexist-miss", "expr-unknown-op",
        "labels-and-expr-fail", "labels-and-exprs-match"])
def test_matches_label_selector(selector, labels, expected):
    assert matches(selector, labels) is expected


# -- edges found by mutation testing (docs/testing.md) ----------------------------------------------
# A label value starts and ends with a letter or digit, so a negative number is no value at all.
@pytest.mark.parametrize("text, expected", [
    ("a<0", [("a", "Lt", ["0"])]),
    ("a>007", [("a", "Gt", ["007"])]),
], ids=["lt-zero", "gt-leading-zeros"])
def test_parse_integer_comparisons(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["a>x", "a<1x", "a>X1", "a>1.5", "a<"],
                         ids=["letter", "trailing-letter", "leading-letter", "decimal", "empty"])
def test_parse_comparison_needs_an_integer(text):
    with pytest.raises(UsageError) as info:
        parse(text)
    assert str(info.value).endswith("needs an integer")


@pytest.mark.parametrize("text, labels, expected", [
    ("count<4", {"count": "4"}, False),
    ("count>4", {"count": "4"}, False),
    ("count<4", {"count": "3"}, True),
    ("count>0", {"count": "-1"}, False),
    ("count<0", {"count": "-1"}, True),
], ids=["lt-equal", "gt-equal", "lt-below", "gt-negative-label", "lt-negative-label"])
def test_matches_comparison_is_strict(text, labels, expected):
    assert matches_string(parse(text), labels) is expected
