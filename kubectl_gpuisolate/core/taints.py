"""Taints and tolerations: parsing, validation, matching and list edits.

Pure functions over plain data (taints and tolerations are the API's JSON
dicts).  The rules follow the Kubernetes API (core/v1 ``ToleratesTaint``) and
kubectl's taint syntax; nothing here talks to a cluster.
"""

import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import ConflictError, UsageError
from .maintenance import refuse_provider_key

ApiTaint = Dict[str, Any]        # a taint or toleration as the API's JSON has it

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DEFAULT_TAINT = "nvidia.com/gpu=true:NoSchedule"

# What adding or removing a taint did to a node: kubectl's verbs, and the two no-ops.
TAINTED, MODIFIED, ALREADY_TAINTED = "tainted", "modified", "already tainted"
UNTAINTED, NOT_TAINTED = "untainted", "not tainted"
WRITES = frozenset({TAINTED, MODIFIED, UNTAINTED})      # the verbs that change the node

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class Taint(NamedTuple):
    key: str
    value: str
    effect: str

    @classmethod
    def from_api(cls, taint: ApiTaint) -> "Taint":
        return cls(taint.get("key", ""), taint.get("value", "") or "", taint.get("effect", ""))

    def to_api(self) -> ApiTaint:
        taint = {"key": self.key, "effect": self.effect}
        if self.value:
            taint["value"] = self.value
        return taint

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


class TaintRef(NamedTuple):
    """What ``untaint`` removes: a key, and optionally only one effect."""

    key: str
    effect: Optional[str]

    def matches(self, taint: ApiTaint) -> bool:
        return taint.get("key") == self.key and self.effect in (None, taint.get("effect"))

    def __str__(self) -> str:
        return f"{self.key}:{self.effect}" if self.effect else self.key


def validate_key(key: str, spec: str) -> None:
    """Checks a taint key as the API does (a qualified name)."""
    if not key:
        raise UsageError(f"invalid taint {spec!r}: the key is empty; use KEY[=VALUE]:EFFECT")
    prefix, _, name = key.rpartition("/")
    if "/" in prefix or (key.count("/") == 1 and not prefix):
        raise UsageError(f"invalid taint key {key!r}: use [PREFIX/]NAME, e.g. nvidia.com/gpu")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        raise UsageError(f"invalid taint key {key!r}: prefix {prefix!r} must be a lower-case DNS subdomain")
    if len(name) > 63 or not _NAME.match(name):
        raise UsageError(f"invalid taint key {key!r}: the name part must be 1-63 characters of "
                         "[A-Za-z0-9-_.], starting and ending with a letter or digit")


def validate_value(value: str, spec: str) -> None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise UsageError(f"invalid taint value {value!r} in {spec!r}: use at most 63 characters of "
                         "[A-Za-z0-9-_.], starting and ending with a letter or digit")


def validate_effect(effect: str, spec: str) -> None:
    if effect not in EFFECTS:
        raise UsageError(f"invalid taint effect {effect!r} in {spec!r}: use one of "
                         + ", ".join(EFFECTS))


def parse_taint(spec: str) -> Taint:
    """Parses kubectl's ``KEY[=VALUE]:EFFECT``."""
    if spec.endswith("-"):
        raise UsageError(f"invalid taint {spec!r}: a trailing '-' removes a taint; use 'untaint' for that")
    head, sep, effect = spec.rpartition(":")
    if not sep:
        raise UsageError(f"invalid taint {spec!r}: missing effect; use KEY[=VALUE]:EFFECT, "
                         "e.g. nvidia.com/gpu=true:NoSchedule")
    key, _, value = head.partition("=")
    validate_key(key, spec)
    refuse_provider_key(key, spec)
    validate_value(value, spec)
    validate_effect(effect, spec)
    return Taint(key, value, effect)


def parse_taint_ref(spec: str) -> TaintRef:
    """Parses ``KEY`` or ``KEY:EFFECT`` (a trailing ``-`` as in kubectl is accepted)."""
    text = spec[:-1] if spec.endswith("-") else spec
    key, sep, effect = text.partition(":")
    if "=" in key:
        raise UsageError(f"invalid taint {spec!r}: untaint takes KEY or KEY:EFFECT, without a value")
    validate_key(key, spec)
    refuse_provider_key(key, spec)
    if sep:
        validate_effect(effect, spec)
        return TaintRef(key, effect)
    return TaintRef(key, None)


def tolerates(toleration: ApiTaint, taint: ApiTaint) -> bool:
    """True when one toleration tolerates one taint, by the API's rules.

    An empty effect matches every effect; an empty key (with Exists) matches
    every key; Equal (or no operator) compares values, so an empty value only
    matches an empty value; any other operator never matches.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerates_all(tolerations: Optional[Sequence[ApiTaint]],
                  taints: Iterable[ApiTaint]) -> bool:
    """True when every taint is tolerated by at least one toleration."""
    tolerations = tolerations or ()
    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints)


def tolerating(tolerations: Optional[Sequence[ApiTaint]], taints: Iterable[ApiTaint]) -> List[ApiTaint]:
    """The tolerations that tolerate at least one of ``taints``, in the pod's order."""
    wanted = tuple(taints)
    return [t for t in tolerations or () if any(tolerates(t, taint) for taint in wanted)]


def tolerates_any_key(toleration: ApiTaint) -> bool:
    """A keyless ``Exists``: it tolerates every taint (of its effect, or of all effects)."""
    return not toleration.get("key") and toleration.get("operator") == "Exists"


def toleration_text(toleration: ApiTaint) -> str:
    """A toleration as a manifest's reader finds it: ``{operator: Exists}`` for the keyless
    form, else ``KEY[=VALUE][:EFFECT]`` with ``(Exists)`` when it matches any value."""
    effect = toleration.get("effect") or ""
    if tolerates_any_key(toleration):
        return "{operator: Exists" + (f", effect: {effect}" if effect else "") + "}"
    exists = toleration.get("operator") == "Exists"
    value = "" if exists or not toleration.get("value") else f"={toleration['value']}"
    return (f"{toleration.get('key', '')}{value}{':' + effect if effect else ''}"
            f"{' (Exists)' if exists else ''}")


def same_identity(a: ApiTaint, b: ApiTaint) -> bool:
    """The API identifies a taint by key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def add_taint(taints: Optional[Sequence[ApiTaint]], new: Taint, *,
              overwrite: bool) -> Tuple[List[ApiTaint], str]:
    """Returns ``(new_taints, verb)`` with verb TAINTED, MODIFIED or ALREADY_TAINTED.

    The same key and effect with another value is an error unless ``overwrite``.
    Other taints are kept as they are, in their order.
    """
    wanted = new.to_api()
    result: List[ApiTaint] = []
    verb = TAINTED
    for taint in taints or ():
        if same_identity(taint, wanted):
            if (taint.get("value") or "") == new.value:
                return list(taints or ()), ALREADY_TAINTED
            if not overwrite:
                raise ConflictError(
                    f"already has taint {Taint.from_api(taint)} with the same key and effect; "
                    "use --overwrite to change its value")
            result.append(dict(taint, **wanted) if new.value else
                          {k: v for k, v in dict(taint, **wanted).items() if k != "value"})
            verb = MODIFIED
        else:
            result.append(taint)
    if verb == TAINTED:
        result.append(wanted)
    return result, verb


def remove_taint(taints: Optional[Sequence[ApiTaint]],
                 ref: TaintRef) -> Tuple[List[ApiTaint], List[ApiTaint]]:
    """Returns ``(remaining, removed)``; never touches taints the ref does not name."""
    remaining: List[ApiTaint] = []
    removed: List[ApiTaint] = []
    for taint in taints or ():
        (removed if ref.matches(taint) else remaining).append(taint)
    return remaining, removed


# The two edits in the shape ``Kube.update_node_taints`` computes with:
# (the taints to write, or None when nothing changes, the verb).
def add_taint_write(taints: Optional[Sequence[ApiTaint]], new: Taint, *,
                    overwrite: bool) -> Tuple[Optional[List[ApiTaint]], str]:
    result, verb = add_taint(taints, new, overwrite=overwrite)
    return (None if verb == ALREADY_TAINTED else result), verb


def remove_taint_write(taints: Optional[Sequence[ApiTaint]],
                       ref: TaintRef) -> Tuple[Optional[List[ApiTaint]], str]:
    remaining, removed = remove_taint(taints, ref)
    return (remaining, UNTAINTED) if removed else (None, NOT_TAINTED)


def gpu_taints_on(node_taints: Optional[Sequence[ApiTaint]],
                  managed: Taint) -> List[ApiTaint]:
    """The taints on a node that have the managed taint's key and effect, any value."""
    want = managed.to_api()
    return [t for t in node_taints or () if same_identity(t, want)]


def effective_gpu_taints(node_taints: Optional[Sequence[ApiTaint]],
                         managed: Taint) -> List[ApiTaint]:
    """The taints a pod must tolerate to stay: those on the node, else the one
    ``taint`` would apply."""
    return gpu_taints_on(node_taints, managed) or [managed.to_api()]
