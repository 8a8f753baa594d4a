"""What ``taint``, ``untaint``, ``status`` and ``evacuate`` say about the nodes' managers
(core/managers.py): the once-per-pool note that a kubectl taint does not survive replacement,
the refusal to fight a controller over a taint it owns, and GKE Autopilot's "nothing to do"."""

from typing import Callable, List, Optional

from ..core import managers
from ..core.taints import ApiTaint, Taint, TaintRef
from ..errors import ConflictError

AUTOPILOT_NOTE = managers.AUTOPILOT_NOTE


def warn_pools(nodes: List[dict], action: str, warn: Callable[[str], None]) -> None:
    for note in managers.pool_notes(nodes, action):
        warn(note)


def autopilot(nodes: List[dict], err) -> bool:
    """True (and says so, once, on ``err``) when the nodes are GKE Autopilot nodes: Autopilot
    is a whole cluster's mode, so one such node is enough."""
    if any(managers.is_autopilot(node) for node in nodes):
        err.write(AUTOPILOT_NOTE + "\n")
        return True
    return False


def _taints(node) -> List[ApiTaint]:
    return list((node.get("spec") or {}).get("taints") or [])


def _refuse(refused: List[str]) -> None:
    if refused:
        raise ConflictError(f"{'; '.join(refused)}; change it there, not on the node "
                            "(nothing was written)")


def _owned_line(node, manager: managers.Manager, what: str) -> str:
    return (f"node {node['metadata']['name']}: {what} is owned by {manager.kind} {manager.pool}, "
            f"which puts it back ({manager.reverts})")


def refuse_owned_removal(nodes: List[dict], ref: TaintRef) -> None:
    """Before ``untaint`` writes: refuse when a taint it would remove is one a controller
    provably owns (it would restore it: a write loop, not a removal)."""
    refused = []
    for node in nodes:
        manager: Optional[managers.Manager] = managers.owner_of_key(node, ref.key)
        if manager and any(ref.matches(t) for t in _taints(node)):
            refused.append(_owned_line(node, manager, f"taint {ref}"))
    _refuse(refused)


def refuse_owned_change(nodes: List[dict], taint: Taint) -> None:
    """Before ``taint`` writes: refuse when it would change the value of a taint a controller
    provably owns (the controller forces its value back)."""
    refused = []
    for node in nodes:
        manager = managers.owner_of_key(node, taint.key)
        if manager is None:
            continue
        for current in _taints(node):
            same = current.get("key") == taint.key and current.get("effect") == taint.effect
            if same and (current.get("value") or "") != taint.value:
                refused.append(_owned_line(node, manager, f"taint {Taint.from_api(current)}"))
    _refuse(refused)
