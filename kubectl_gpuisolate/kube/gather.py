"""The facts the planner needs, read concurrently: each node's pods (their essentials only),
the cluster's PodDisruptionBudgets and whether the DaemonSets owning pods still exist; then,
only when some pod would move, what the landing check reads (core.landing.Cluster): every
node, the claims and volumes of the pods that would move, and their controllers' templates."""

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..core import claims, gpu, landing, planner
from ..errors import GpuIsolateError
from . import essentials
from .api import CONTROLLER_PATHS
from .nodes import FETCH_WORKERS

# More controllers of one kind than this, and their templates are read with one list of the
# kind rather than a GET each (thousands of ReplicaSets at 5,000 nodes: ~16 s of GETs).
LIST_OWNERS = 50


def gather(kube, nodes, *, not_older_than=None, pdbs=None, check_daemonsets=True,
           arrived: Optional[Callable[[Any, List[Any]], None]] = None):
    """Fetches, concurrently, the pods of each node (their essentials), the cluster's PDBs
    and whether the DaemonSets owning those pods still exist; a node's DaemonSets are
    looked up as soon as its pods arrive, while other nodes' pods are still coming.

    ``not_older_than``: the node list's resourceVersion, for reads from the API
    server's watch cache (see Kube.list_pods_on_node).  ``pdbs``: a Future of the PDB
    list when the caller started it earlier.  Returns ({node name: pods}, pdbs,
    missing DaemonSets as (namespace, name)).  ``arrived(node, pods)`` is called with each
    node's pods as they come, in this thread.
    """
    by_name = {n["metadata"]["name"]: n for n in nodes}
    names = list(by_name)
    share = essentials.Shared()

    def pods_on(name):
        return [essentials.pod(p, share) for p in kube.list_pods_on_node(name, not_older_than=not_older_than)]

    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(nodes) + 1)) as pool:
        pdb_future = pdbs if pdbs is not None else pool.submit(kube.list_pdbs)
        futures = {pool.submit(pods_on, name): name for name in names}
        pods_by_node: Dict[str, List[Dict[str, Any]]] = {}
        ds_futures: Dict[Tuple[str, str], Future] = {}
        for future in as_completed(futures):
            pods = pods_by_node[futures[future]] = future.result()
            if arrived is not None:
                arrived(by_name[futures[future]], pods)
            if check_daemonsets:
                for key in planner.daemonsets_to_check(pods) - ds_futures.keys():
                    ds_futures[key] = pool.submit(kube.daemonset_exists, *key)
        missing = frozenset(key for key, f in ds_futures.items() if not f.result())
        pdbs = pdb_future.result()
    return {name: pods_by_node[name] for name in names}, pdbs, missing


def build_plans(kube, nodes, options, *, check_daemonsets=True, not_older_than=None, pdbs=None,
                landing_check=False, warn=None, run=None, cluster_nodes=None):
    """The nodes' plans.  With ``landing_check``, the pods that would move are judged again
    with where they could land (core.landing) outside ``run``, the names of the run's nodes
    (default: ``nodes``'); what cannot be read for it is said to ``warn`` and left out.
    ``cluster_nodes``: every node, when the caller has just listed them (else listed here)."""
    warn = warn or (lambda message: None)
    with ThreadPoolExecutor(max_workers=2) as early:
        lists = TemplateLists(kube, options, early)
        pods_by_node, pdbs, missing = gather(kube, nodes, not_older_than=not_older_than, pdbs=pdbs,
                                             check_daemonsets=check_daemonsets,
                                             arrived=lists.arrived if landing_check else None)
        held = resource_claims(kube, [p for pods in pods_by_node.values() for p in pods], warn)

        plans = [planner.plan_node(node, pods_by_node[node["metadata"]["name"]], pdbs, options,
                                   missing, None, held) for node in nodes]
        movers = [pod for plan in plans for pod in _movers(plan, pods_by_node[plan.name])]
        if not landing_check or not movers:
            return plans
        run = frozenset(run or (n["metadata"]["name"] for n in nodes))
        cluster = landing_cluster(kube, run, movers, warn, cluster_nodes, lists.started)
        # Only the movers are decided again: the landing check changes no other decision.
        return [planner.plan_node(node, pods_by_node[plan.name], pdbs, options, missing, cluster,
                                  held, settled=plan.settled) for node, plan in zip(nodes, plans)]


class TemplateLists:
    """The lists of controllers' templates (kube.list_template_pins, one per kind) started
    while the pods are still arriving: once the pods that would move already have more than
    LIST_OWNERS controllers of one kind, _templates would list that kind anyway (at 5,000
    nodes the ReplicaSets' 27 pages, ~5 s, are then read beside the pods rather than after).

    Each node's pods are planned as they arrive without PDBs, DaemonSet checks or claims; that
    keeps more pods than the real plan does, never fewer, so no list is started that the real
    plan would not make.  Only the pods whose controller is new and of a kind not yet listed
    are planned (a decision is the pod's own): the rest cannot start a list."""

    def __init__(self, kube, options: planner.PlanOptions, pool: ThreadPoolExecutor):
        self.kube, self.options, self.pool = kube, options, pool
        self.owners: Dict[str, Set[Tuple[str, str]]] = {}
        self.started: Dict[str, Future] = {}

    def arrived(self, node, pods):
        pods = [p for p in pods if self._could_start_a_list(p)]
        if not pods:
            return
        plan = planner.plan_node(node, pods, (), self.options)
        for namespace, kind, name in _controllers(_movers(plan, pods)):
            if kind in self.started or kind not in CONTROLLER_PATHS:
                continue
            seen = self.owners.setdefault(kind, set())
            seen.add((namespace, name))
            if len(seen) > LIST_OWNERS:
                self.started[kind] = self.pool.submit(self.kube.list_template_pins, kind)

    def _could_start_a_list(self, pod):
        ref = planner.controller_of(pod)
        if ref is None or ref.get("kind") in self.started or ref.get("kind") not in CONTROLLER_PATHS:
            return False
        key = (pod["metadata"].get("namespace", ""), ref.get("name", ""))
        return key not in self.owners.get(ref.get("kind", ""), ())


def resource_claims(kube, pods, warn):
    """{(namespace, name): claim or None} of the DRA claims these pods hold (core.claims), read
    only when some pod has claims; None when they cannot be read, said once to ``warn`` (the
    planner then keeps every pod with claims, the conservative rule)."""
    wanted = claims.wanted(pods)
    if not wanted:
        return {}
    try:
        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(wanted))) as pool:
            found = list(pool.map(lambda key: kube.get_resource_claim(*key), wanted))
    except GpuIsolateError as exc:
        warn(f"cannot read the pods' ResourceClaims, so every pod with claims is kept as a GPU "
             f"pod: {exc}")
        return None
    return dict(zip(wanted, found))


def _movers(plan, pods):
    """The pods of a plan that would move and have a controller: those the landing check judges."""
    uids = {d.uid for d in plan.movable if d.owner}
    return [p for p in pods if p["metadata"].get("uid") in uids]


def landing_cluster(kube, run, movers, warn, cluster_nodes=None, started=None):
    """What the landing check reads for ``movers`` (core.landing.Cluster); ``run`` names the
    run's nodes.  Of each node it keeps what the filters and the GPU-node rules read.
    ``started``: {kind: Future of its template list} begun earlier (TemplateLists)."""
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
        all_nodes = pool.submit(kube.list_nodes) if cluster_nodes is None else None
        volumes = pool.submit(_volumes, kube, movers, warn)
        templates = pool.submit(_templates, kube, movers, warn, started or {})
        # Nodes the caller listed are already cut (essentials.node): copying them again would
        # hold a second 5,000 small dicts at the limit.
        everything = (list(cluster_nodes) if all_nodes is None else
                      [essentials.landing_node(n) for n in all_nodes.result()])
        return landing.Cluster(
            nodes=tuple(everything), run=run,
            gpu=run | frozenset(n["metadata"]["name"] for n in gpu.gpu_nodes(everything)),
            volumes=volumes.result(), templates=templates.result())


def _volumes(kube, movers, warn):
    """{(namespace, claim): its bound PV, None while unbound, or landing.MISSING}; None when the
    claims or volumes cannot be read (then the landing check leaves volumes out)."""
    claims = sorted({(p["metadata"].get("namespace", ""), v["persistentVolumeClaim"]["claimName"])
                     for p in movers for v in p["spec"].get("volumes") or ()
                     if (v.get("persistentVolumeClaim") or {}).get("claimName")})
    found: Dict[Tuple[str, str], Any] = {}
    try:
        for key in claims:
            claim = kube.get_pvc(*key)
            volume = ((claim or {}).get("spec") or {}).get("volumeName")
            bound = ((claim or {}).get("status") or {}).get("phase") == "Bound"
            found[key] = landing.MISSING if claim is None else \
                (kube.get_pv(volume) if bound and volume else None)
    except GpuIsolateError as exc:
        warn(f"the landing check leaves volumes out: {exc}")
        return None
    return found


def _controllers(pods):
    """(namespace, kind, name) of the pods' controllers."""
    return {(p["metadata"].get("namespace", ""), ref.get("kind", ""), ref.get("name", ""))
            for p in pods for ref in p["metadata"].get("ownerReferences") or ()
            if ref.get("controller")}


def _templates(kube, movers, warn, started):
    """{(namespace, kind, name): nodeName} of the movers' controllers whose template sets one:
    a GET of each controller, or of a kind with more than LIST_OWNERS of them one list of that
    kind (``started[kind]`` when begun earlier; where the list is refused, the GETs)."""
    owners = sorted(_controllers(movers))
    found = {}
    by_kind: Dict[str, List[Tuple[str, str, str]]] = {}
    for key in owners:
        by_kind.setdefault(key[1], []).append(key)
    single = []
    for kind, keys in by_kind.items():
        if len(keys) <= LIST_OWNERS or kind not in CONTROLLER_PATHS:
            single += keys
            continue
        try:
            pins = started[kind].result() if kind in started else kube.list_template_pins(kind)
        except GpuIsolateError:
            single += keys      # e.g. no cluster-wide list right: read them one by one
            continue
        found.update({key: pins[key[0], key[2]] for key in keys if (key[0], key[2]) in pins})
    try:
        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(single) + 1)) as pool:
            controllers = list(pool.map(lambda key: kube.get_controller(*key) or {}, single))
    except GpuIsolateError as exc:
        warn(f"the landing check leaves controllers' templates out: {exc}")
        return {}
    for key, controller in zip(single, controllers):
        pinned = (((controller.get("spec") or {}).get("template") or {}).get("spec")
                  or {}).get("nodeName")
        if pinned:
            found[key] = pinned
    return found
