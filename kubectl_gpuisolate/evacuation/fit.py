"""Before any eviction: will the moving pods fit where they can land?  (issue #13, item 3)

Advisory: one warning per shortfall on stderr (``output.evacuate.report_fit``), never a
refusal; dry runs warn too.  It reads the nodes and one cluster-wide list of the pods that are
not Succeeded or Failed (each kept as its requests, ``Kube.list_pod_requests``; the nodes
come from the run's own list when it has one), and only when a moving pod's landing nodes are
known.  A real run reads that pod list anyway: the UIDs it
holds are the pods that existed before the first eviction, which the replacement watch
(``replacements.py``) needs to tell the replacements apart.
"""

from typing import FrozenSet, Optional

from ..core.resources import free_allocatable, pod_requests, shortfalls
from ..errors import GpuIsolateError
from ..flags import DryRun
from ..output import tables as output
from ..output.evacuate import report_fit


def check_fit(kube, plans, options, err, nodes=None) -> Optional[FrozenSet[str]]:
    """Warns of each shortfall of the plans' moving pods; returns the UIDs of the pods that
    exist now (None when they were not read).  ``nodes``: every node, when the run has listed
    them already (else they are listed here, if needed)."""
    moving = [d for plan in plans for d in plan.to_move]
    landed = [d for d in moving if d.landing]
    watching = options.dry_run is DryRun.NONE and any(d.owner_uid for d in moving)
    if not landed and not watching:
        return None
    try:
        pods = kube.list_pod_requests()
        if nodes is None:
            nodes = kube.list_nodes() if landed else []
    except GpuIsolateError as exc:
        output.warn(f"could not read the pods and nodes to check whether the moving pods fit "
                    f"where they can land, nor watch their replacements: {exc}", err)
        return None
    if landed:
        by_uid = {(p.get("metadata") or {}).get("uid"): p for p in pods}
        found = shortfalls([(pod_requests(by_uid.get(d.uid) or {}), d.landing) for d in landed],
                           free_allocatable(nodes, pods))
        report_fit(found, err)
    return frozenset((p.get("metadata") or {}).get("uid") or "" for p in pods)
