"""Will the moving pods fit?  CPU and memory requests against the free allocatable of the nodes
where their replacements can land (pure).

- ``parse_quantity``: a Kubernetes quantity (``500m``, ``1Gi``, ``1e3``, ``1.5``, ``100Ki``,
  ``2k``, ``1E``) as an exact Fraction.  A malformed one raises ``InvalidQuantity``; where
  requests are added up (``pod_requests``, ``free_allocatable``) a malformed value counts as 0:
  the API server validates quantities, so it never returns one.
- ``pod_requests``: a pod's effective requests, as the scheduler computes them: the larger of
  (the app containers plus the sidecars, i.e. init containers with ``restartPolicy: Always``)
  and (each init container plus the sidecars started before it), plus ``spec.overhead``;
  pod-level ``spec.resources.requests`` replace the containers' sum for the resources they name.
- ``free_allocatable``: per node, ``status.allocatable`` minus the requests of the pods bound
  there (the caller passes pods that are not Succeeded or Failed).
- ``shortfalls``: the moving pods grouped by their landing set; a group whose requests exceed
  the free allocatable of its landing nodes (summed) is one shortfall per resource, and when
  the sum fits, the pods too large for any one of its nodes are one (a pod is not split).  With
  several groups their union is checked too, for the resources no group's sum is short of.
"""

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

Obj = Dict[str, Any]
Resources = Dict[str, Fraction]

CPU = "cpu"
MEMORY = "memory"
CHECKED = (CPU, MEMORY)

_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9),
            "T": Fraction(10 ** 12), "P": Fraction(10 ** 15), "E": Fraction(10 ** 18)}
# sign, digits (with an optional fraction), then a suffix: binary, decimal, or an exponent.
_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


class InvalidQuantity(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(text: Any) -> Fraction:
    """A quantity as an exact number (``"500m"`` is 1/2, ``"1Ki"`` 1024).  Numbers are taken
    as they are.  ``1E`` is an exa (10**18); ``1E3`` and ``1e3`` are exponents (1000), as the
    API server reads them."""
    if isinstance(text, bool):
        raise InvalidQuantity(f"not a quantity: {text!r}")
    if isinstance(text, (int, float)):
        return Fraction(text)
    if not isinstance(text, str):
        raise InvalidQuantity(f"not a quantity: {text!r}")
    found = _QUANTITY.fullmatch(text.strip())
    if not found:
        raise InvalidQuantity(f"not a quantity: {text!r}")
    sign, number, exponent, suffix = found.groups()
    value = Fraction(number)
    if exponent:
        value *= Fraction(10) ** int(exponent[1:])
    elif suffix in _BINARY:
        value *= _BINARY[suffix]
    else:
        value *= _DECIMAL[suffix or ""]
    return -value if sign == "-" else value


def _resources(found: Any) -> Resources:
    """A ResourceList (``{"cpu": "500m"}``) as numbers; malformed values count as 0."""
    result: Resources = {}
    for name, text in (found or {}).items() if isinstance(found, Mapping) else ():
        try:
            result[name] = parse_quantity(text)
        except InvalidQuantity:
            result[name] = Fraction(0)
    return result


def _add(into: Resources, more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, Fraction(0)) + value


def _at_least(into: Resources, more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        into[name] = max(into.get(name, Fraction(0)), value)


def _requests(container: Any) -> Resources:
    return _resources(((container or {}).get("resources") or {}).get("requests"))


def pod_requests(pod: Obj) -> Resources:
    """The pod's effective requests per resource, as the scheduler counts them."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for container in spec.get("containers") or ():
        _add(total, _requests(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in spec.get("initContainers") or ():
        wants = _requests(container)
        if (container or {}).get("restartPolicy") == "Always":   # a sidecar: runs to the end
            _add(total, wants)
            _add(sidecars, wants)
            _at_least(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, wants)
            _at_least(init_peak, running)
    _at_least(total, init_peak)
    total.update(_resources((spec.get("resources") or {}).get("requests")))
    _add(total, _resources(spec.get("overhead")))
    return total


def free_allocatable(nodes: Iterable[Obj], pods: Iterable[Obj]) -> Dict[str, Resources]:
    """Per node name: allocatable (capacity when the node reports none) minus the requests of
    the pods bound to it.  It may be negative (an overcommitted node)."""
    free: Dict[str, Resources] = {}
    for node in nodes:
        status = node.get("status") or {}
        free[(node.get("metadata") or {}).get("name", "")] = _resources(
            status.get("allocatable") or status.get("capacity"))
    for pod in pods:
        bound = free.get((pod.get("spec") or {}).get("nodeName") or "")
        if bound is not None:
            for name, value in pod_requests(pod).items():
                bound[name] = bound.get(name, Fraction(0)) - value
    return free


SET = "set"        # the pods of one landing set need more than its nodes have free in all
UNION = "union"    # all the moving pods need more than all their landing nodes have free
EACH = "each"      # pods that each need more than any one of their landing nodes has free


@dataclass(frozen=True)
class Shortfall:
    """``pods`` moving pods need ``need`` of ``resource`` (EACH: the largest of them needs it);
    their landing ``nodes`` have ``have`` free (EACH: the node with the most free, and that
    amount).  A node's free allocatable counts as 0 when it is below."""
    resource: str
    pods: int
    need: Fraction
    have: Fraction
    nodes: Tuple[str, ...]
    scope: str = SET


def _free(free: Mapping[str, Resources], node: str, resource: str) -> Fraction:
    return max(free.get(node, {}).get(resource, Fraction(0)), Fraction(0))


def _short(resource: str, members: Sequence[Resources], nodes: FrozenSet[str],
           free: Mapping[str, Resources], scope: str) -> Optional[Shortfall]:
    """The sum of the members' requests against the sum of the nodes' free, or (SET, when that
    sum fits) the members that fit on none of the nodes alone."""
    need = sum((m.get(resource, Fraction(0)) for m in members), Fraction(0))
    have = sum((_free(free, n, resource) for n in nodes), Fraction(0))
    if need > have:
        return Shortfall(resource, len(members), need, have, tuple(sorted(nodes)), scope)
    if scope != SET:
        return None
    roomiest = max(sorted(nodes), key=lambda n: _free(free, n, resource))
    most = _free(free, roomiest, resource)
    too_big = [m.get(resource, Fraction(0)) for m in members if m.get(resource, Fraction(0)) > most]
    if not too_big:
        return None
    return Shortfall(resource, len(too_big), max(too_big), most, (roomiest,), EACH)


def shortfalls(moving: Iterable[Tuple[Resources, Iterable[str]]],
               free: Mapping[str, Resources]) -> List[Shortfall]:
    """``moving``: (requests, landing node names) per moving pod; pods with no landing node
    known are left out.  One Shortfall per landing set and resource short of it, largest need
    first; then, with several landing sets, their union for each resource none was short of."""
    groups: Dict[FrozenSet[str], List[Resources]] = {}
    for requests, landing in moving:
        nodes = frozenset(landing)
        if nodes:
            groups.setdefault(nodes, []).append(requests)
    found: List[Shortfall] = []
    for nodes, members in groups.items():
        found += [s for s in (_short(r, members, nodes, free, SET) for r in CHECKED) if s]
    found.sort(key=lambda s: (CHECKED.index(s.resource), -s.need, s.nodes))
    if len(groups) > 1:
        everyone = [m for members in groups.values() for m in members]
        union = frozenset().union(*groups)
        short_alone = {s.resource for s in found if s.scope == SET}
        found += [s for s in (_short(r, everyone, union, free, UNION)
                              for r in CHECKED if r not in short_alone) if s]
    return found
