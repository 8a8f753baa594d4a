"""After the move: do the moved pods' replacements get scheduled?  (issue #13, item 4)

Once the run's evictions are over, the controllers of the pods that moved are watched for a
settle window (``SETTLE_SECONDS``, bounded by what is left of --timeout; one look when
nothing is left).  A replacement is a pod whose controller (ownerReferences, by UID) is one of
theirs and that did not exist before the first eviction (``before``: the UIDs of the pods
listed then).  The watch polls the cluster's unscheduled pods (Pending, bound to no node)
every ``POLL_SECONDS``; it ends early once two polls in a row find no such replacement.  What
it reports is each replacement still unscheduled at the end that the scheduler marked
Unschedulable (condition PodScheduled=False, reason Unschedulable), with its message.

Advisory: it changes no exit code; dry runs and interrupted runs do not watch.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..core.planner import controller_of
from ..errors import ApiError, ConnectionFailed

SETTLE_SECONDS = 30.0    # how long the replacements get to be scheduled
POLL_SECONDS = 1.0       # between two looks at the unscheduled pods
QUIET_POLLS = 2          # looks in a row without a Pending replacement that end the wait


@dataclass(frozen=True)
class Replacement:
    """A replacement the scheduler marked Unschedulable."""

    node: str        # the node its controller's pod moved from
    ref: str         # namespace/name of the replacement
    owner: str       # Kind/name of the controller
    message: str     # the scheduler's message


def watched(results) -> Dict[str, Tuple[str, str]]:
    """{controller UID: (node, Kind/name)} of the pods that moved, first node first."""
    found: Dict[str, Tuple[str, str]] = {}
    for result in results:
        for outcome in result.outcomes:
            uid = outcome.target.owner_uid
            if outcome.done and uid and uid not in found:
                found[uid] = (result.name, outcome.target.owner)
    return found


def unschedulable_message(pod) -> Optional[str]:
    """The scheduler's message when it marked the pod Unschedulable, else None."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            return condition.get("message") or "no message"
    return None


class ReplacementWatch:
    """One settle window over the replacements of the pods that moved."""

    def __init__(self, kube, halt, *, before, window=SETTLE_SECONDS, poll=POLL_SECONDS,
                 say=None):
        self._kube, self._halt = kube, halt
        self._before = before            # UIDs of the pods that existed before any eviction
        self._window, self._poll = window, poll
        self._say = say or (lambda message: None)

    def _pending(self, owners):
        """The unscheduled replacements of ``owners``' pods now; None when the list failed."""
        try:
            pods = self._kube.list_unscheduled_pods()
        except (ApiError, ConnectionFailed) as exc:
            self._say(f"could not list the unscheduled pods: {exc}")
            return None
        found = []
        for pod in pods:
            meta = pod.get("metadata") or {}
            ref = controller_of(pod)
            if ref and ref.get("uid") in owners and meta.get("uid") not in self._before:
                found.append(pod)
        return found

    def run(self, results) -> List[Replacement]:
        """Watches until the replacements settle or the window ends; returns the ones the
        scheduler marked Unschedulable, by node and name."""
        owners = watched(results)
        if not owners or self._before is None or self._halt.stop.is_set():
            return []
        clock = self._halt.clock
        left = self._halt.left()
        end = clock.now() + (self._window if left is None else max(0.0, min(self._window, left)))
        self._say(f"watching the replacements of {len(owners)} controller(s) for up to "
                  f"{max(0.0, end - clock.now()):.0f}s")
        pending, quiet = [], 0
        for _ in range(int(self._window / self._poll) + 1):   # bounded whatever the clock does
            now = self._pending(owners)
            if now is not None:
                pending = now
                quiet = 0 if pending else quiet + 1
            if quiet >= QUIET_POLLS or clock.now() >= end or self._halt.stop.is_set():
                break
            self._halt.nap(min(self._poll, end - clock.now()))
        return self._unschedulable(pending, owners)

    @staticmethod
    def _unschedulable(pending, owners) -> List[Replacement]:
        found = []
        for pod in pending:
            message, ref = unschedulable_message(pod), controller_of(pod)
            if message is not None and ref is not None:
                meta = pod.get("metadata") or {}
                node, owner = owners[ref["uid"]]
                found.append(Replacement(node, f"{meta.get('namespace', '')}/{meta.get('name', '')}",
                                         owner, message))
        return sorted(found, key=lambda r: (r.node, r.ref))
