"""How the eviction engine handles one Eviction response, and how long it waits before retrying.

Pure.  ``classify`` turns a failed eviction request (an ``errors.ApiError`` subclass or a
``ConnectionFailed``) into a ``Verdict``, by the error's type:

| response                                         | verdict                                      |
|--------------------------------------------------|----------------------------------------------|
| ``ConnectionFailed`` (network)                   | retry                                        |
| ``ApiNotFound`` (404)                            | done: the pod is gone                        |
| ``Conflict`` (409, the UID precondition)         | conflict: read the pod; a new UID means done |
| ``TooManyRequests`` with a ``DisruptionBudget``  | pdb: retry, say "PDB ns/x: needs N, has M"   |
| ``TooManyRequests`` without it (throttling)      | retry                                        |
| ``ServerError`` 500 "more than one PodDisr..."   | fatal for the pod, naming its PDBs           |
| any other ``ServerError`` (5xx)                  | retry                                        |
| ``Forbidden`` with a ``NamespaceTerminating``    | retry (the namespace deletion removes it)    |
| any other 403, 400, 401, ...                     | fatal, with the server's message             |

After a conflict the engine reads the pod; ``after_conflict`` judges what it read:

| the pod read after a 409                   | verdict                                      |
|--------------------------------------------|----------------------------------------------|
| 404                                        | done: the pod is gone                        |
| another HTTP error, or a network error     | retry                                        |
| a new UID (a new pod with the same name)   | done: the pod we meant is gone               |
| the same UID, terminating                  | terminating: wait for it                     |
| the same UID, not terminating              | retry                                        |

The wait between retries is a ``kube.retry.Backoff``: ``PDB_EVICTIONS`` after a budget's refusal,
``EVICTIONS`` after any other.
"""

import enum
import re
from dataclasses import dataclass
from typing import Optional

from ..errors import ApiNotFound, Conflict, ConnectionFailed, Forbidden, ServerError, TooManyRequests


class Kind(enum.Enum):
    """What one eviction response means (``Verdict.kind``)."""

    DONE = "done"                 # the pod is gone
    PDB = "pdb"                   # its PodDisruptionBudget allows no disruption now
    RETRY = "retry"               # transient: try again after a backoff
    FATAL = "fatal"               # retrying cannot fix it
    CONFLICT = "conflict"         # the UID precondition failed: read the pod (after_conflict)
    TERMINATING = "terminating"   # the pod is already terminating: wait for it


V_DONE, V_PDB, V_RETRY, V_FATAL, V_CONFLICT, V_TERMINATING = (
    Kind.DONE, Kind.PDB, Kind.RETRY, Kind.FATAL, Kind.CONFLICT, Kind.TERMINATING)

MULTI_PDB_TEXT = "more than one PodDisruptionBudget"
_PDB_STATUS = re.compile(r"disruption budget (\S+) needs (-?\d+) healthy pods? and has (-?\d+)")
_PDB_NAME = re.compile(r"disruption budget (\S+)")


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    note: str = ""
    retry_after: Optional[float] = None


def pdb_note(namespace, message):
    """'PDB ns/name: needs N healthy, has M' from a DisruptionBudget cause message."""
    match = _PDB_STATUS.search(message or "")
    if match:
        name, needs, has = match.groups()
        return f"PDB {namespace}/{name}: needs {needs} healthy, has {has}"
    match = _PDB_NAME.search(message or "")
    if match and "still being processed" in message:
        return f"PDB {namespace}/{match.group(1)}: still being processed by the server"
    return f"PDB: {message}" if message else "a PodDisruptionBudget allows no disruption now"


def classify(exc, target):
    """How to handle one failed eviction request (the table above)."""
    if isinstance(exc, ConnectionFailed):
        return Verdict(V_RETRY, "the API server did not answer (network error)")
    if isinstance(exc, ApiNotFound):
        return Verdict(V_DONE, "already gone")
    if isinstance(exc, Conflict):
        return Verdict(V_CONFLICT, "conflict (HTTP 409)")
    if isinstance(exc, TooManyRequests):
        causes = [c for c in exc.causes if c.get("reason") == "DisruptionBudget"]
        if causes:
            return Verdict(V_PDB, pdb_note(target.namespace, causes[0].get("message", "")),
                           exc.retry_after)
        return Verdict(V_RETRY, "throttled by the API server (HTTP 429)", exc.retry_after)
    if isinstance(exc, ServerError):
        if exc.status == 500 and MULTI_PDB_TEXT in str(exc):
            names = ", ".join(target.pdbs) or "names not known when the run started"
            return Verdict(V_FATAL, f"matched by several PodDisruptionBudgets ({names}), which "
                                    "the eviction API refuses; fix the PDBs")
        return Verdict(V_RETRY, f"HTTP {exc.status} from the API server", exc.retry_after)
    if isinstance(exc, Forbidden) and exc.has_cause("NamespaceTerminating"):
        return Verdict(V_RETRY, f"namespace {target.namespace} is terminating")
    return Verdict(V_FATAL, str(exc))


def after_conflict(target, pod_or_error):
    """Whether the pod we meant is still there after a 409 (the second table above).

    ``pod_or_error`` is the pod the engine read after the conflict (a dict), or the
    ``ApiError`` or ``ConnectionFailed`` that reading it raised."""
    if isinstance(pod_or_error, ConnectionFailed):
        return Verdict(V_RETRY, "conflict, then a network error reading the pod")
    if not isinstance(pod_or_error, dict):
        if isinstance(pod_or_error, ApiNotFound):
            return Verdict(V_DONE, "gone (not found after a conflict)")
        return Verdict(V_RETRY, f"conflict, then HTTP {pod_or_error.status} reading the pod")
    meta = pod_or_error.get("metadata") or {}
    if meta.get("uid") != target.uid:
        return Verdict(V_DONE, "gone (replaced by a new pod with the same name)")
    if meta.get("deletionTimestamp"):
        return Verdict(V_TERMINATING, "is already terminating")
    return Verdict(V_RETRY, "conflict (HTTP 409)")
