"""core/taints.py: kubectl taint syntax, the API's toleration rules, list edits."""

import pytest

from kubectl_gpuisolate.core.taints import (
    DEFAULT_TAINT,
    Taint,
    TaintRef,
    add_taint,
    add_taint_write,
    effective_gpu_taints,
    gpu_taints_on,
    parse_taint,
    parse_taint_ref,
    remove_taint,
    remove_taint_write,
    tolerates,
    tolerates_all,
)
from kubectl_gpuisolate.errors import ConflictError, UsageError
from kubectl_gpuisolate.exits import EXIT_CONFLICT, EXIT_USAGE

from ..factories import (
    CONTROL_PLANE_TAINT,
    DEFAULT_TOLERATIONS,
    GPU_TAINT,
    GPU_TAINT_PRESENT,
    INFERENCE_TOLERATIONS,
)

NAME_63 = "a" * 63
NAME_64 = "a" * 64


# -- parse_taint ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ("nvidia.com/gpu=true:NoSchedule", Taint("nvidia.com/gpu", "true", "NoSchedule")),
    ("key:NoExecute", Taint("key", "", "NoExecute")),
    ("a/b=c:PreferNoSchedule", Taint("a/b", "c", "PreferNoSchedule")),
    ("nvidia.com/gpu=present:NoSchedule", Taint("nvidia.com/gpu", "present", "NoSchedule")),
    ("dedicated=gpu-pool_1.x:NoSchedule", Taint("dedicated", "gpu-pool_1.x", "NoSchedule")),
    ("k=:NoSchedule", Taint("k", "", "NoSchedule")),
    ("x:NoSchedule", Taint("x", "", "NoSchedule")),
    (f"example.com/{NAME_63}=v:NoSchedule", Taint(f"example.com/{NAME_63}", "v", "NoSchedule")),
    (f"k={NAME_63}:NoSchedule", Taint("k", NAME_63, "NoSchedule")),
    ("Upper_Case.Name-1:NoSchedule", Taint("Upper_Case.Name-1", "", "NoSchedule")),
], ids=["gpu-true", "key-only", "prefixed", "present-value", "value-chars", "empty-value",
        "one-char-key", "63-char-name", "63-char-value", "name-mixed-case"])
def test_parse_taint_valid(spec, expected):
    assert parse_taint(spec) == expected


@pytest.mark.parametrize("spec, fragment", [
    ("nvidia.com/gpu=true", "missing effect"),
    ("nvidia.com/gpu", "missing effect"),
    ("nvidia.com/gpu=true:NoSchedul", "invalid taint effect 'NoSchedul'"),
    ("nvidia.com/gpu=true:noschedule", "invalid taint effect"),
    ("nvidia.com/gpu=true:", "invalid taint effect ''"),
    (":NoSchedule", "the key is empty"),
    ("=v:NoSchedule", "the key is empty"),
    ("Nvidia.com/gpu=true:NoSchedule", "lower-case DNS subdomain"),
    ("nvidia_com/gpu:NoSchedule", "lower-case DNS subdomain"),
    ("-nvidia.com/gpu:NoSchedule", "lower-case DNS subdomain"),
    ("nvidia.com/g$u:NoSchedule", "the name part"),
    ("nvidia.com/-gpu:NoSchedule", "the name part"),
    ("nvidia.com/gpu-:NoSchedule", "the name part"),
    ("nvidia.com/:NoSchedule", "the name part"),
    ("/gpu:NoSchedule", "[PREFIX/]NAME"),
    ("a/b/c:NoSchedule", "[PREFIX/]NAME"),
    (f"{NAME_64}:NoSchedule", "1-63 characters"),
    (f"example.com/{NAME_64}=v:NoSchedule", "1-63 characters"),
    (f"{'a' * 254}/gpu:NoSchedule", "lower-case DNS subdomain"),
    ("k=bad value:NoSchedule", "invalid taint value"),
    ("k=-v:NoSchedule", "invalid taint value"),
    ("k=v=w:NoSchedule", "invalid taint value 'v=w'"),
    ("k=a/b:NoSchedule", "invalid taint value"),
    (f"k={NAME_64}:NoSchedule", "invalid taint value"),
    ("nvidia.com/gpu=true:NoSchedule-", "trailing '-'"),
    ("nvidia.com/gpu-", "trailing '-'"),
], ids=["no-effect", "key-only-no-effect", "effect-typo", "effect-lowercase", "effect-empty",
        "empty-key", "empty-key-with-value", "prefix-uppercase", "prefix-underscore",
        "prefix-leading-dash", "name-dollar", "name-leading-dash", "name-trailing-dash",
        "name-empty", "prefix-empty", "two-slashes", "64-char-name", "64-char-prefixed-name",
        "254-char-prefix", "value-space", "value-leading-dash", "value-equals", "value-slash",
        "64-char-value", "trailing-dash", "trailing-dash-key"])
def test_parse_taint_invalid(spec, fragment):
    with pytest.raises(UsageError) as info:
        parse_taint(spec)
    assert fragment in str(info.value)
    assert info.value.exit_code == EXIT_USAGE
    assert "\n" not in str(info.value)


def test_default_taint_parses():
    assert str(parse_taint(DEFAULT_TAINT)) == DEFAULT_TAINT


@pytest.mark.parametrize("taint, api, text", [
    (Taint("nvidia.com/gpu", "true", "NoSchedule"), GPU_TAINT, "nvidia.com/gpu=true:NoSchedule"),
    (Taint("k", "", "NoExecute"), {"key": "k", "effect": "NoExecute"}, "k:NoExecute"),
], ids=["with-value", "without-value"])
def test_taint_api_roundtrip(taint, api, text):
    assert taint.to_api() == api
    assert Taint.from_api(api) == taint
    assert str(taint) == text


def test_taint_from_api_null_value():
    assert Taint.from_api({"key": "k", "value": None, "effect": "NoSchedule"}).value == ""


# -- parse_taint_ref ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ("nvidia.com/gpu", TaintRef("nvidia.com/gpu", None)),
    ("nvidia.com/gpu:NoSchedule", TaintRef("nvidia.com/gpu", "NoSchedule")),
    ("nvidia.com/gpu-", TaintRef("nvidia.com/gpu", None)),
    ("nvidia.com/gpu:NoExecute-", TaintRef("nvidia.com/gpu", "NoExecute")),
    ("k:PreferNoSchedule", TaintRef("k", "PreferNoSchedule")),
], ids=["key", "key-effect", "key-dash", "key-effect-dash", "prefer"])
def test_parse_taint_ref_valid(spec, expected):
    assert parse_taint_ref(spec) == expected


@pytest.mark.parametrize("spec, fragment", [
    ("nvidia.com/gpu=true", "without a value"),
    ("nvidia.com/gpu=true:NoSchedule", "without a value"),
    ("nvidia.com/gpu=true:NoSchedule-", "without a value"),
    ("nvidia.com/gpu:NoSchedul", "invalid taint effect"),
    ("nvidia.com/gpu:", "invalid taint effect"),
    ("", "the key is empty"),
    ("-", "the key is empty"),
    (":NoSchedule", "the key is empty"),
    ("Bad.Prefix/gpu", "lower-case DNS subdomain"),
], ids=["with-value", "with-value-effect", "with-value-effect-dash", "bad-effect",
        "empty-effect", "empty", "dash-only", "no-key", "bad-prefix"])
def test_parse_taint_ref_invalid(spec, fragment):
    with pytest.raises(UsageError) as info:
        parse_taint_ref(spec)
    assert fragment in str(info.value)


@pytest.mark.parametrize("ref, text", [
    (TaintRef("k", None), "k"), (TaintRef("k", "NoSchedule"), "k:NoSchedule"),
], ids=["key", "key-effect"])
def test_taint_ref_str(ref, text):
    assert str(ref) == text


# -- tolerates ------------------------------------------------------------------------------------
NO_EXEC = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}
EMPTY_VALUE = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
OTHER_KEY = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

TOLERATES_CASES = [
    # (toleration, taint, expected, id)
    ({"operator": "Exists"}, GPU_TAINT, True, "empty-key-exists-matches-all"),
    ({"operator": "Exists"}, NO_EXEC, True, "empty-key-exists-any-effect"),
    ({"operator": "Exists"}, OTHER_KEY, True, "empty-key-exists-other-key"),
    ({"operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True,
     "empty-key-exists-effect-match"),
    ({"operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False,
     "empty-key-exists-effect-mismatch"),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True,
     "empty-effect-matches-noschedule"),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, NO_EXEC, True,
     "empty-effect-matches-noexecute"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": ""}, NO_EXEC, True,
     "explicit-empty-effect"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
     GPU_TAINT, True, "equal-same-value"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"},
     GPU_TAINT, False, "equal-other-value"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
     GPU_TAINT_PRESENT, False, "equal-true-vs-present"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}, GPU_TAINT, False,
     "equal-empty-value-vs-true"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}, EMPTY_VALUE, True,
     "equal-empty-value-vs-empty"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "", "effect": "NoSchedule"},
     EMPTY_VALUE, True, "equal-explicit-empty-value"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}, EMPTY_VALUE, False,
     "equal-true-vs-empty"),
    ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, GPU_TAINT, True,
     "missing-operator-is-equal-match"),
    ({"key": "nvidia.com/gpu", "value": "false", "effect": "NoSchedule"}, GPU_TAINT, False,
     "missing-operator-is-equal-mismatch"),
    ({"key": "nvidia.com/gpu", "operator": "", "value": "true"}, GPU_TAINT, True,
     "empty-operator-is-equal"),
    ({"key": "nvidia.com/gpu", "effect": "NoSchedule"}, GPU_TAINT, False,
     "missing-operator-no-value-vs-true"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True,
     "exists-with-key-value-true"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT_PRESENT,
     True, "exists-with-key-value-present"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, EMPTY_VALUE, True,
     "exists-with-key-no-value"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False,
     "right-key-only-noexecute"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "PreferNoSchedule"}, GPU_TAINT,
     False, "right-key-only-prefer"),
    ({"key": "amd.com/gpu", "operator": "Exists"}, GPU_TAINT, False, "other-key"),
    ({"key": "nvidia.com/gpu", "operator": "Lt", "value": "5"}, GPU_TAINT, False, "op-lt"),
    ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, GPU_TAINT, False, "op-gt"),
    ({"key": "nvidia.com/gpu", "operator": "Foo", "value": "true"}, GPU_TAINT, False, "op-foo"),
    ({"operator": "Foo"}, GPU_TAINT, False, "empty-key-op-foo"),
    ({"key": "nvidia.com/gpu", "operator": "exists"}, GPU_TAINT, False, "op-lowercase-exists"),
    (DEFAULT_TOLERATIONS[0], GPU_TAINT, False, "not-ready-vs-gpu"),
    (DEFAULT_TOLERATIONS[0], {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}, True,
     "not-ready-vs-not-ready"),
]


@pytest.mark.parametrize("toleration, taint, expected", [c[:3] for c in TOLERATES_CASES],
                         ids=[c[3] for c in TOLERATES_CASES])
def test_tolerates(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


GPU_NOEXECUTE_ONLY = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]

TOLERATES_ALL_CASES = [
    (INFERENCE_TOLERATIONS, [GPU_TAINT], True, "inference-vs-true"),
    (INFERENCE_TOLERATIONS, [GPU_TAINT_PRESENT], True, "inference-vs-present"),
    (INFERENCE_TOLERATIONS, [GPU_TAINT, GPU_TAINT_PRESENT], True, "inference-vs-both"),
    (INFERENCE_TOLERATIONS, [NO_EXEC], False, "inference-vs-noexecute"),
    (DEFAULT_TOLERATIONS, [GPU_TAINT], False, "default-only-vs-true"),
    (GPU_NOEXECUTE_ONLY + DEFAULT_TOLERATIONS, [GPU_TAINT], False, "right-key-only-noexecute"),
    ([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}],
     [GPU_TAINT], False, "equal-other-value"),
    ([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
     [GPU_TAINT, GPU_TAINT_PRESENT], False, "tolerates-one-of-two"),
    ([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"},
      {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}],
     [GPU_TAINT, GPU_TAINT_PRESENT], True, "two-tolerations-two-taints"),
    ([{"operator": "Exists"}], [GPU_TAINT, NO_EXEC, CONTROL_PLANE_TAINT], True, "tolerate-all"),
    ([], [GPU_TAINT], False, "no-tolerations"),
    (None, [GPU_TAINT], False, "tolerations-none"),
    (None, [], True, "no-taints"),
]


@pytest.mark.parametrize("tolerations, taints, expected", [c[:3] for c in TOLERATES_ALL_CASES],
                         ids=[c[3] for c in TOLERATES_ALL_CASES])
def test_tolerates_all(tolerations, taints, expected):
    assert tolerates_all(tolerations, taints) is expected


# -- add_taint ------------------------------------------------------------------------------------
NEW_TRUE = Taint("nvidia.com/gpu", "true", "NoSchedule")
NEW_PRESENT = Taint("nvidia.com/gpu", "present", "NoSchedule")
NEW_NOVALUE = Taint("nvidia.com/gpu", "", "NoSchedule")
TIMED = {"key": "other", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}

ADD_CASES = [
    # (existing, new, overwrite, expected list, verb, id)
    (None, NEW_TRUE, False, [GPU_TAINT], "tainted", "none"),
    ([], NEW_TRUE, False, [GPU_TAINT], "tainted", "empty"),
    ([CONTROL_PLANE_TAINT], NEW_TRUE, False, [CONTROL_PLANE_TAINT, GPU_TAINT], "tainted",
     "appended-after-others"),
    ([GPU_TAINT], NEW_TRUE, False, [GPU_TAINT], "already tainted", "same"),
    ([GPU_TAINT], NEW_TRUE, True, [GPU_TAINT], "already tainted", "same-overwrite"),
    ([CONTROL_PLANE_TAINT, GPU_TAINT_PRESENT, TIMED], NEW_TRUE, True,
     [CONTROL_PLANE_TAINT, GPU_TAINT, TIMED], "modified", "overwrite-keeps-order"),
    ([GPU_TAINT], NEW_NOVALUE, True, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
     "modified", "overwrite-to-no-value"),
    ([NO_EXEC], NEW_TRUE, False, [NO_EXEC, GPU_TAINT], "tainted", "other-effect-is-other-taint"),
    ([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], NEW_NOVALUE, False,
     [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "already tainted", "no-value-same"),
]


@pytest.mark.parametrize("existing, new, overwrite, expected, verb", [c[:5] for c in ADD_CASES],
                         ids=[c[5] for c in ADD_CASES])
def test_add_taint(existing, new, overwrite, expected, verb):
    before = [dict(t) for t in existing] if existing else existing
    result, got_verb = add_taint(existing, new, overwrite=overwrite)
    assert (result, got_verb) == (expected, verb)
    assert existing == before  # the input list is never modified


def test_add_taint_modified_keeps_time_added():
    existing = [dict(GPU_TAINT_PRESENT, timeAdded="2025-01-01T00:00:00Z")]
    result, verb = add_taint(existing, NEW_TRUE, overwrite=True)
    assert verb == "modified"
    assert result == [dict(GPU_TAINT, timeAdded="2025-01-01T00:00:00Z")]


@pytest.mark.parametrize("existing, new", [
    ([GPU_TAINT_PRESENT], NEW_TRUE),
    ([CONTROL_PLANE_TAINT, GPU_TAINT], NEW_PRESENT),
    ([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], NEW_TRUE),
], ids=["present-to-true", "true-to-present", "no-value-to-true"])
def test_add_taint_conflict_without_overwrite(existing, new):
    with pytest.raises(ConflictError) as info:
        add_taint(existing, new, overwrite=False)
    assert info.value.exit_code == EXIT_CONFLICT
    assert "--overwrite" in str(info.value)
    assert str(Taint.from_api(existing[-1])) in str(info.value)


# -- remove_taint ---------------------------------------------------------------------------------
NODE_TAINTS = [CONTROL_PLANE_TAINT, GPU_TAINT, NO_EXEC, OTHER_KEY]

REMOVE_CASES = [
    (TaintRef("nvidia.com/gpu", None), [CONTROL_PLANE_TAINT, OTHER_KEY], [GPU_TAINT, NO_EXEC],
     "key-removes-all-effects"),
    (TaintRef("nvidia.com/gpu", "NoSchedule"), [CONTROL_PLANE_TAINT, NO_EXEC, OTHER_KEY],
     [GPU_TAINT], "key-effect-noschedule"),
    (TaintRef("nvidia.com/gpu", "NoExecute"), [CONTROL_PLANE_TAINT, GPU_TAINT, OTHER_KEY],
     [NO_EXEC], "key-effect-noexecute"),
    (TaintRef("nvidia.com/gpu", "PreferNoSchedule"), NODE_TAINTS, [], "absent-effect"),
    (TaintRef("amd.com/gpu", None), NODE_TAINTS, [], "absent-key"),
    (TaintRef("nvidia.com", None), NODE_TAINTS, [], "key-prefix-is-not-a-match"),
]


@pytest.mark.parametrize("ref, remaining, removed", [c[:3] for c in REMOVE_CASES],
                         ids=[c[3] for c in REMOVE_CASES])
def test_remove_taint(ref, remaining, removed):
    assert remove_taint(list(NODE_TAINTS), ref) == (remaining, removed)


def test_remove_taint_from_none():
    assert remove_taint(None, TaintRef("k", None)) == ([], [])


# -- the writes: what Kube.update_node_taints computes with ---------------------------------------
@pytest.mark.parametrize("existing, overwrite, expected", [
    (None, False, ([GPU_TAINT], "tainted")),
    ([CONTROL_PLANE_TAINT], False, ([CONTROL_PLANE_TAINT, GPU_TAINT], "tainted")),
    ([GPU_TAINT], False, (None, "already tainted")),
    ([GPU_TAINT_PRESENT], True, ([GPU_TAINT], "modified")),
], ids=["none", "beside-others", "already", "overwrite"])
def test_add_taint_write_writes_nothing_when_the_node_has_the_taint(existing, overwrite, expected):
    assert add_taint_write(existing, NEW_TRUE, overwrite=overwrite) == expected


def test_add_taint_write_refuses_a_value_conflict():
    with pytest.raises(ConflictError):
        add_taint_write([GPU_TAINT_PRESENT], NEW_TRUE, overwrite=False)


@pytest.mark.parametrize("ref, expected", [
    (TaintRef("nvidia.com/gpu", None), ([CONTROL_PLANE_TAINT, OTHER_KEY], "untainted")),
    (TaintRef("nvidia.com/gpu", "NoExecute"),
     ([CONTROL_PLANE_TAINT, GPU_TAINT, OTHER_KEY], "untainted")),
    (TaintRef("amd.com/gpu", None), (None, "not tainted")),
], ids=["all-effects", "one-effect", "absent"])
def test_remove_taint_write(ref, expected):
    assert remove_taint_write(list(NODE_TAINTS), ref) == expected


# -- gpu_taints_on / effective_gpu_taints ----------------------------------------------------------
MANAGED = Taint("nvidia.com/gpu", "true", "NoSchedule")

GPU_TAINTS_CASES = [
    (None, [], [GPU_TAINT], "none"),
    ([], [], [GPU_TAINT], "empty"),
    ([CONTROL_PLANE_TAINT], [], [GPU_TAINT], "other-taint-only"),
    ([GPU_TAINT], [GPU_TAINT], [GPU_TAINT], "managed"),
    ([CONTROL_PLANE_TAINT, GPU_TAINT_PRESENT], [GPU_TAINT_PRESENT], [GPU_TAINT_PRESENT],
     "other-value-counts"),
    ([NO_EXEC], [], [GPU_TAINT], "other-effect-does-not-count"),
    ([EMPTY_VALUE, GPU_TAINT_PRESENT], [EMPTY_VALUE, GPU_TAINT_PRESENT],
     [EMPTY_VALUE, GPU_TAINT_PRESENT], "several"),
]


@pytest.mark.parametrize("node_taints, on, effective", [c[:3] for c in GPU_TAINTS_CASES],
                         ids=[c[3] for c in GPU_TAINTS_CASES])
def test_gpu_taints(node_taints, on, effective):
    assert gpu_taints_on(node_taints, MANAGED) == on
    assert effective_gpu_taints(node_taints, MANAGED) == effective


# -- edges found by mutation testing (docs/testing.md) ----------------------------------------------
PREFIX_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])


@pytest.mark.parametrize("spec, valid", [
    (f"{PREFIX_253}/gpu:NoSchedule", True),
    (f"{PREFIX_253}e/gpu:NoSchedule", False),
], ids=["253-char-prefix", "254-char-subdomain-prefix"])
def test_prefix_length_limit_is_253(spec, valid):
    if valid:
        assert parse_taint(spec).key == spec.split(":")[0]
    else:
        with pytest.raises(UsageError) as info:
            parse_taint(spec)
        assert "lower-case DNS subdomain" in str(info.value)


@pytest.mark.parametrize("api, taint", [
    ({}, Taint("", "", "")),
    ({"effect": "NoSchedule"}, Taint("", "", "NoSchedule")),
    ({"key": "k"}, Taint("k", "", "")),
], ids=["empty", "effect-only", "key-only"])
def test_taint_from_api_missing_fields_are_empty(api, taint):
    assert Taint.from_api(api) == taint
    assert all(isinstance(part, str) for part in Taint.from_api(api))


def test_add_taint_overwrite_to_no_value_keeps_time_added():
    existing = [dict(GPU_TAINT, timeAdded="2025-01-01T00:00:00Z")]
    result, verb = add_taint(existing, NEW_NOVALUE, overwrite=True)
    assert verb == "modified"
    assert result == [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}]
