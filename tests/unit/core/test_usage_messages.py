"""core/taints.py and core/selectors.py, word for word: the one-line errors a user sees for a bad
--gpu-taint, taint/untaint argument or -l selector (each names what was typed and what to type)."""

import pytest

from kubectl_gpuisolate.core import selectors, taints
from kubectl_gpuisolate.core.taints import Taint, add_taint
from kubectl_gpuisolate.errors import ConflictError, UsageError
from kubectl_gpuisolate.exits import EXIT_CONFLICT, EXIT_USAGE

NAME_RULE = "[A-Za-z0-9-_.], starting and ending with a letter or digit"
SELECTOR_SYNTAX = "use KEY=VALUE, KEY!=VALUE, KEY, !KEY or KEY in (A,B)"

# (id, function, argument, the error's text)
USAGE_CASES = [
    # -- parse_taint -------------------------------------------------------------------------------
    ("taint-no-effect", taints.parse_taint, "k=v",
     "invalid taint 'k=v': missing effect; use KEY[=VALUE]:EFFECT, e.g. nvidia.com/gpu=true:NoSchedule"),
    ("taint-empty-key", taints.parse_taint, "=v:NoSchedule",
     "invalid taint '=v:NoSchedule': the key is empty; use KEY[=VALUE]:EFFECT"),
    ("taint-bad-name", taints.parse_taint, "k$:NoSchedule",
     f"invalid taint key 'k$': the name part must be 1-63 characters of {NAME_RULE}"),
    ("taint-bad-prefix", taints.parse_taint, "A.b/k:NoSchedule",
     "invalid taint key 'A.b/k': prefix 'A.b' must be a lower-case DNS subdomain"),
    ("taint-two-slashes", taints.parse_taint, "a/b/c:NoSchedule",
     "invalid taint key 'a/b/c': use [PREFIX/]NAME, e.g. nvidia.com/gpu"),
    ("taint-bad-value", taints.parse_taint, "k=-v:NoSchedule",
     f"invalid taint value '-v' in 'k=-v:NoSchedule': use at most 63 characters of {NAME_RULE}"),
    # The effect is what follows the last colon, so a colon in the value is a bad value.
    ("taint-colon-in-value", taints.parse_taint, "k=v:x:NoSchedule",
     f"invalid taint value 'v:x' in 'k=v:x:NoSchedule': use at most 63 characters of {NAME_RULE}"),
    ("taint-bad-effect", taints.parse_taint, "k=v:Never",
     "invalid taint effect 'Never' in 'k=v:Never': use one of NoSchedule, PreferNoSchedule, NoExecute"),
    ("taint-trailing-dash", taints.parse_taint, "k:NoSchedule-",
     "invalid taint 'k:NoSchedule-': a trailing '-' removes a taint; use 'untaint' for that"),
    # -- parse_taint_ref ---------------------------------------------------------------------------
    ("ref-empty-key", taints.parse_taint_ref, ":NoSchedule",
     "invalid taint ':NoSchedule': the key is empty; use KEY[=VALUE]:EFFECT"),
    ("ref-bad-effect", taints.parse_taint_ref, "k:Never-",
     "invalid taint effect 'Never' in 'k:Never-': use one of NoSchedule, PreferNoSchedule, NoExecute"),
    ("ref-with-value", taints.parse_taint_ref, "k=v",
     "invalid taint 'k=v': untaint takes KEY or KEY:EFFECT, without a value"),
    # -- selectors.parse ---------------------------------------------------------------------------
    ("selector-set-bad-key", selectors.parse, "Bad.Prefix/a in (x)",
     "invalid selector 'Bad.Prefix/a in (x)': 'Bad.Prefix/a' is not a valid label key"),
    ("selector-set-bad-value", selectors.parse, "a in (x,-y)",
     "invalid selector 'a in (x,-y)': '-y' is not a valid label value"),
    ("selector-bad-value", selectors.parse, "a=-x",
     "invalid selector 'a=-x': '-x' is not a valid label value"),
    ("selector-exists-bad-key", selectors.parse, "b,Bad.Prefix/a",
     "invalid selector 'b,Bad.Prefix/a': 'Bad.Prefix/a' is not a valid label key"),
    ("selector-not-in", selectors.parse, "!a in (x)",
     "invalid selector '!a in (x)': '!' cannot precede 'in'"),
    ("selector-gt-not-integer", selectors.parse, "a>x",
     "invalid selector 'a>x': > needs an integer"),
    ("selector-lt-not-integer", selectors.parse, "a<1x",
     "invalid selector 'a<1x': < needs an integer"),
    ("selector-cannot-parse", selectors.parse, "a=b=c",
     f"invalid selector 'a=b=c': cannot parse 'a=b=c'; {SELECTOR_SYNTAX}"),
    # Only the part that fails is quoted: commas split at parenthesis depth 0, nesting counted.
    ("selector-nested-parens", selectors.parse, "a in ((x)),b",
     f"invalid selector 'a in ((x)),b': cannot parse 'a in ((x))'; {SELECTOR_SYNTAX}"),
]


@pytest.mark.parametrize("function, argument, text", [c[1:] for c in USAGE_CASES],
                         ids=[c[0] for c in USAGE_CASES])
def test_usage_error_word_for_word(function, argument, text):
    with pytest.raises(UsageError) as info:
        function(argument)
    assert str(info.value) == text
    assert info.value.exit_code == EXIT_USAGE


def test_add_taint_conflict_word_for_word():
    with pytest.raises(ConflictError) as info:
        add_taint([{"key": "k", "value": "a", "effect": "NoSchedule"}], Taint("k", "b", "NoSchedule"),
                  overwrite=False)
    assert str(info.value) == ("already has taint k=a:NoSchedule with the same key and effect; "
                               "use --overwrite to change its value")
    assert info.value.exit_code == EXIT_CONFLICT
