"""Before any eviction: will the moving pods fit where they can land?  (issue #13, item 3)

Advisory: one warning per shortfall on stderr (``output.evacuate.report_fit``), never a
refusal; dry runs warn too.  It runs only when a moving pod's landing nodes are known, and
reads the nodes (the run's own list when it has one) and the pods, not Succeeded or Failed,
that the check needs, each kept as its requests (``Kube.list_pod_requests``): those bound to
the landing nodes and to the run's nodes whose pods move.  When those nodes are at most
``PER_NODE_SHARE`` of the cluster's, that is one list per node, read concurrently; else one
cluster-wide list, which at 150,000 pods is 300 pages and over a minute (issue #15).

A real run whose moving pods have controllers also notes, before the first eviction, the
pods that are unscheduled then: the replacement watch (``replacements.py``) tells the
replacements from them.  A pod bound to a node never becomes unscheduled again, so the
unscheduled pods are all the baseline it needs.
"""

from concurrent.futures import ThreadPoolExecutor
from typing import FrozenSet, Optional

from ..core.dryrun import DryRun
from ..core.resources import free_allocatable, pod_requests, shortfalls
from ..errors import GpuIsolateError
from ..kube.nodes import FETCH_WORKERS
from ..output import tables as output
from ..output.evacuate import report_fit

# The nodes to read, as a share of the cluster's, up to which the pods are listed node by node.
PER_NODE_SHARE = 0.5


def check_fit(kube, plans, options, err, nodes=None) -> Optional[FrozenSet[str]]:
    """Warns of each shortfall of the plans' moving pods; returns the UIDs of the pods that
    are unscheduled now when the run will watch replacements (else, or when they could not be
    read, None).  ``nodes``: every node, when the run has listed them already (else they are
    listed here, if needed)."""
    moving = [d for plan in plans for d in plan.to_move]
    if any(d.landing for d in moving):
        _warn_of_shortfalls(kube, plans, nodes, err)
    if options.dry_run is not DryRun.NONE or not any(d.owner_uid for d in moving):
        return None
    try:
        return frozenset((p.get("metadata") or {}).get("uid") or ""
                         for p in kube.list_unscheduled_pods())
    except GpuIsolateError as exc:
        output.warn(f"could not list the unscheduled pods, so the moved pods' replacements will "
                    f"not be watched: {exc}", err)
        return None


def _warn_of_shortfalls(kube, plans, nodes, err):
    landed = [(plan.name, d) for plan in plans for d in plan.to_move if d.landing]
    wanted = {on for on, _ in landed} | {name for _, d in landed for name in d.landing}
    try:
        if nodes is None:
            nodes = kube.list_nodes()
        pods = _pod_requests(kube, sorted(wanted), len(nodes))
    except GpuIsolateError as exc:
        output.warn(f"could not read the pods and nodes to check whether the moving pods fit "
                    f"where they can land: {exc}", err)
        return
    by_uid = {(p.get("metadata") or {}).get("uid"): p for p in pods}
    found = shortfalls([(pod_requests(by_uid.get(d.uid) or {}), d.landing) for _, d in landed],
                       free_allocatable(nodes, pods))
    report_fit(found, err)


def _pod_requests(kube, wanted, cluster_size):
    """The requests of the pods bound to the ``wanted`` nodes (and maybe of others)."""
    if len(wanted) > PER_NODE_SHARE * cluster_size:
        return kube.list_pod_requests()
    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(wanted))) as pool:
        return [pod for pods in pool.map(kube.list_pod_requests, wanted) for pod in pods]
