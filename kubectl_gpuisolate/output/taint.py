"""What ``taint`` and ``untaint`` print (and ``evacuate --taint-first`` before it plans): one line per
node, what the write did to it, and the note, before tainting, about the running pods the new
taint keeps where they are, or, for a NoExecute taint, the pods it would delete."""

from typing import NamedTuple

from ..core.taints import WRITES


class TaintChange(NamedTuple):
    node: str          # the node's name
    verb: str          # core.taints: tainted, modified, already tainted, untainted, not tainted
    dry_run: object    # core.dryrun.DryRun: its suffix says that a write was only checked


def render_change(change):
    suffix = change.dry_run.suffix if change.verb in WRITES else ""
    return f"node/{change.node} {change.verb}{suffix}\n"


def untolerated_note(plan, taint):
    """For stderr, before ``taint`` writes: the node's running pods that do not tolerate it."""
    return (f"node/{plan.name}: {len(plan.misplaced)} running pod(s) do not tolerate {taint}; "
            "the taint keeps new ones off, 'kubectl gpuisolate evacuate' moves these\n")


def deletion_report(name, deletions, taint, *, allowed):
    """For stderr, before a NoExecute taint is written: the pods it would delete on one node."""
    head = ("will delete" if allowed else "would delete")
    lines = [f"node/{name}: {taint} {head} {len(deletions)} pod(s) (the taint-eviction "
             "controller deletes them, bypassing the Eviction API and every PodDisruptionBudget):\n"]
    lines += [f"  {d.describe()}\n" for d in deletions]
    return "".join(lines)


def prefer_warning(taint):
    return (f"{taint} is only a preference: the scheduler may still place pods that do not "
            "tolerate it on these nodes; use NoSchedule to keep them off")
