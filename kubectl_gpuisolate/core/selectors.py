"""Label selectors: parsing the ``-l`` syntax and matching API selectors.

Pure.  ``parse`` validates a kubectl-style selector string before it is sent
to the server, so a typo gets a one-line error.  ``matches`` evaluates a
``metav1.LabelSelector`` (matchLabels and matchExpressions) against labels, as
the API does for PodDisruptionBudgets.
"""

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import UsageError

Requirement = Tuple[str, str, List[str]]      # (key, operator, values), as in matchExpressions

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_SET = re.compile(r"^\s*(!?)\s*([^\s!=<>()]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")
_BINARY = re.compile(r"^\s*([^\s!=<>()]+)\s*(==|=|!=|<|>)\s*([^\s!=<>()]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")


def _split(selector: str) -> List[str]:
    """Splits on commas that are not inside parentheses."""
    parts: List[str] = []
    current: List[str] = []
    depth = 0
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _check(selector: str, key: str, values: Sequence[str] = ()) -> None:
    if not _KEY.match(key):
        raise UsageError(f"invalid selector {selector!r}: {key!r} is not a valid label key")
    for value in values:
        if not _VALUE.match(value):
            raise UsageError(f"invalid selector {selector!r}: {value!r} is not a valid label value")


def parse(selector: str) -> List[Requirement]:
    """Validates a selector string; returns a list of (key, operator, values)."""
    requirements: List[Requirement] = []
    if not selector.strip():
        raise UsageError("invalid selector '': give KEY=VALUE, KEY!=VALUE, KEY, !KEY or KEY in (A,B)")
    for part in _split(selector):
        match = _SET.match(part)
        if match:
            negated, key, operator, values = match.groups()
            if negated:
                raise UsageError(f"invalid selector {selector!r}: '!' cannot precede {operator!r}")
            values = [v.strip() for v in values.split(",")]
            _check(selector, key, values)
            requirements.append((key, "In" if operator == "in" else "NotIn", values))
            continue
        match = _BINARY.match(part)
        if match:
            key, operator, value = match.groups()
            _check(selector, key, [value])
            if operator in ("<", ">") and not value.lstrip("-").isdigit():
                raise UsageError(f"invalid selector {selector!r}: {operator} needs an integer")
            name = {"=": "In", "==": "In", "!=": "NotIn", "<": "Lt", ">": "Gt"}[operator]
            requirements.append((key, name, [value]))
            continue
        match = _EXISTS.match(part)
        if match:
            negated, key = match.groups()
            _check(selector, key)
            requirements.append((key, "DoesNotExist" if negated else "Exists", []))
            continue
        raise UsageError(f"invalid selector {selector!r}: cannot parse {part.strip()!r}; "
                         "use KEY=VALUE, KEY!=VALUE, KEY, !KEY or KEY in (A,B)")
    return requirements


def _requirement_matches(labels: Mapping[str, str], key: str, operator: str,
                         values: Sequence[str]) -> bool:
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Lt", "Gt") and key in labels:
        try:
            have, want = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return have < want if operator == "Lt" else have > want
    return False


def matches_string(requirements: Sequence[Requirement], labels: Optional[Mapping[str, str]]) -> bool:
    """Evaluates the result of ``parse`` against a label dict."""
    labels = labels or {}
    return all(_requirement_matches(labels, k, op, vals) for k, op, vals in requirements)


def matches(selector: Optional[Dict[str, Any]], labels: Optional[Mapping[str, str]]) -> bool:
    """Evaluates an API LabelSelector dict.  ``None`` matches nothing and ``{}``
    matches everything, as in policy/v1 PodDisruptionBudgets."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        if not _requirement_matches(labels, expression.get("key", ""),
                                    expression.get("operator", ""),
                                    expression.get("values") or []):
            return False
    return True
