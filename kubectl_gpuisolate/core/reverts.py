"""Who takes a taint off again: the node's own record of its writers, for ``taint``'s check that
its write stayed (commands/taint.py).

A Node's ``metadata.managedFields`` names, per field manager, the fields it last set and when.
``spec.taints`` is an atomic list, so the manager that last wrote the list owns all of it: after
another writer removed our taint, that writer owns ``f:spec/f:taints`` (or, when it removed the
last taint, the list is gone and only its entry's time says it wrote last).  The node's manager
(core/managers.py) says which controller that usually is and where the taint belongs instead.
Pure: plain dicts in, text out."""

from typing import Any, Dict, List, Optional, Sequence

from . import managers

Node = Dict[str, Any]


def _touches_taints(entry: Dict[str, Any]) -> bool:
    spec = ((entry.get("fieldsV1") or {}).get("f:spec")) or {}
    return "f:taints" in spec


def taint_writers(node: Node, own_manager: str) -> List[str]:
    """The field managers other than ``own_manager`` that own the taints list, or wrote the
    node's spec, newest first.  Status writers (the kubelet's heartbeats) own no ``f:spec`` and
    are left out."""
    entries = []
    for entry in (node.get("metadata") or {}).get("managedFields") or ():
        name = entry.get("manager") or ""
        if not name or name == own_manager:
            continue
        if "f:spec" in (entry.get("fieldsV1") or {}):
            entries.append((_touches_taints(entry), entry.get("time") or "", name))
    # Owning the list is the stronger evidence; among equals the newer write.
    entries.sort(key=lambda e: (e[0], e[1]), reverse=True)
    seen: List[str] = []
    for _, _, name in entries:
        if name not in seen:
            seen.append(name)
    return seen


def reverted_message(node: Node, taint: str, attempts: int, own_manager: str, *,
                     also: Sequence[str] = ()) -> str:
    """One line: the taint was taken off after each of ``attempts`` writes, by whom (as far as
    the node says) and where such a taint belongs instead; ``also``: the other nodes where the
    same happened."""
    name = node["metadata"]["name"]
    writers = taint_writers(node, own_manager)
    who = (f"field manager {writers[0]!r} (the node's managedFields) removes it"
           if writers else "the node's managedFields do not name the writer that removes it")
    manager: Optional[managers.Manager] = managers.manager_of(node)
    instead = (f"; the node belongs to {manager.kind} {manager.pool}: set the taint in "
               f"{manager.where}" if manager else
               "; stop that controller or set the taint where it takes its taints from")
    others = f" (and on {len(also)} more node(s): {', '.join(also)})" if also else ""
    return (f"node {name}{others}: {taint} was removed again after each of {attempts} writes: "
            f"{who}{instead}; not writing it again")
