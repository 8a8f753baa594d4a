"""What ``guard`` prints: one line per object written or deleted, as kubectl apply and delete
print them, then what the guard now does; or the objects as one List document (-o json|yaml);
and the guard's line in ``status``."""

from typing import Sequence

from ..core import guard
from ..core.dryrun import DryRun
from .tables import document

CREATED, CONFIGURED, UNCHANGED, DELETED = "created", "configured", "unchanged", "deleted"


def render_change(kind: str, name: str, verb: str, dry_run: DryRun) -> str:
    suffix = dry_run.suffix if verb != UNCHANGED else ""
    return f"{kind.lower()}.{guard.GROUP}/{name} {verb}{suffix}\n"


def render_objects(objects: Sequence[dict], fmt: str) -> str:
    return document({"apiVersion": "v1", "kind": "List", "items": list(objects)}, fmt)


def exempt_text(namespaces: Sequence[str]) -> str:
    return ", ".join(sorted(namespaces)) or "none"


def render_summary(spec: "guard.GuardSpec", dry_run: DryRun) -> str:
    """For stderr: what the written guard does."""
    verb = "would" if dry_run is not DryRun.NONE else "will"
    action = {"Warn": "warn about", "Audit": "audit", "Deny": "reject"}[spec.mode]
    nodes = len(spec.gpu_nodes)
    return (f"guard: the API server {verb} {action} new pods that use no GPU yet tolerate {spec.taint} "
            f"or name one of the {nodes} GPU node{'s' if nodes != 1 else ''}; exempt namespaces: "
            f"{exempt_text(spec.exempt_namespaces)}; 'kubectl gpuisolate status' shows the running "
            "pods it would reject\n")


def render_none_found() -> str:
    return "no guard found (nothing labelled " + guard.LABEL_SELECTOR + ")\n"
