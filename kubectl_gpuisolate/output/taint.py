"""What ``taint`` and ``untaint`` print (and ``evacuate --taint`` before it plans): one line per
node, what the write did to it, and the note, before tainting, about the running pods the new
taint keeps where they are."""

from typing import NamedTuple

from ..core.taints import WRITES


class TaintChange(NamedTuple):
    node: str          # the node's name
    verb: str          # core.taints: tainted, modified, already tainted, untainted, not tainted
    dry_run: object    # flags.DryRun: its suffix says that a write was only checked


def render_change(change):
    suffix = change.dry_run.suffix if change.verb in WRITES else ""
    return f"node/{change.node} {change.verb}{suffix}\n"


def untolerated_note(plan, taint):
    """For stderr, before ``taint`` writes: the node's running pods that do not tolerate it."""
    return (f"node/{plan.name}: {len(plan.misplaced)} running pod(s) do not tolerate {taint}; "
            "the taint keeps new ones off, 'kubectl gpuisolate evacuate' moves these\n")
