"""Evictions as the API server recorded them (its audit log, tests/sandbox/sandboxctl's
policy): each pod's successful evictions, counted by the UID its precondition named.

A ``Mark`` taken before a run makes ``evictions`` read only what came after it."""

import json
from collections import Counter, namedtuple

Eviction = namedtuple("Eviction", "namespace name uid code user_agent dry_run")


def mark(path):
    """The audit log's current size: evictions() from it read only later entries."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def evictions(path, since=0):
    out = []
    try:
        with open(path, "rb") as log:
            log.seek(since)
            lines = log.read().splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue        # a line the server is still writing
        ref = event.get("objectRef") or {}
        if ref.get("subresource") != "eviction" or event.get("stage") != "ResponseComplete":
            continue
        body = event.get("requestObject") or {}
        uid = (((body.get("deleteOptions") or {}).get("preconditions") or {}).get("uid"))
        out.append(Eviction(ref.get("namespace"), ref.get("name"), uid,
                            (event.get("responseStatus") or {}).get("code"),
                            event.get("userAgent", ""), "dryRun=" in event.get("requestURI", "")))
    return out


def evicted_twice(events):
    """Pods (namespace/name uid) with more than one successful, real eviction."""
    done = Counter((e.namespace, e.name, e.uid) for e in events
                   if not e.dry_run and e.code in (200, 201))
    return sorted(f"{ns}/{name} ({uid}) x{n}" for (ns, name, uid), n in done.items() if n > 1)
