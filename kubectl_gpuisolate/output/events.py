"""The messages of the Kubernetes Events ``evacuate`` writes on pods (``evacuation.audit``
chooses which and when), and the one warning when it could not write them.

A message is one sentence that ``kubectl describe pod`` shows beside the reason; it names
the GPU node, since the pod may have moved on by the time someone reads it."""

WHO = "kubectl gpuisolate evacuate"


def evicted(node, why):
    """GpuIsolateEvicted: the eviction was accepted; ``why`` is the planner's message."""
    return f"Evicted from GPU node {node} by {WHO}: {why}"


def eviction_blocked(node, note, never=""):
    """GpuIsolateEvictionBlocked: ``note`` names the PDB ("PDB ns/name: needs N healthy, has M")."""
    then = f"it can never allow an eviction ({never})" if never else \
        "evacuate retries until its --timeout"
    return f"Cannot evict from GPU node {node} as it would violate a PodDisruptionBudget: {note}; {then}"


def left_in_place(node, why):
    """GpuIsolateLeftInPlace on a pod the planner keeps (``why``: its message)."""
    return f"Not evicted from GPU node {node} by {WHO}: {why}"


def refused(node, why):
    """GpuIsolateLeftInPlace on a pod that made the preflight refuse its node."""
    return f"Not evicted: {WHO} refused GPU node {node} because this pod {why}"


def not_moved(node, why):
    """GpuIsolateLeftInPlace on a pod to move that was still there when the run ended."""
    return f"Still on GPU node {node} when {WHO} ended: {why}"


def not_written(unwritten, total, failure):
    """The one warning of a run whose events could not all be written."""
    return (f"could not write {unwritten} of {total} Kubernetes event(s) on the pods (the record "
            f"of what evacuate did; the evacuation itself is unaffected): {failure}")
