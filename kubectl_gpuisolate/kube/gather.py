"""The facts the planner needs, read concurrently: each node's pods (their essentials only),
the cluster's PodDisruptionBudgets and whether the DaemonSets owning pods still exist; then,
only when some pod would move, what the landing check reads (core.landing.Cluster): every
node, the claims and volumes of the pods that would move, and their controllers' templates,
most of it begun while the pods are still arriving (LandingReads)."""

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Dict, List, Optional, Set, Tuple

from ..core import claims, gpu, landing, planner
from ..errors import GpuIsolateError
from . import essentials
from .api import CONTROLLER_PATHS
from .nodes import FETCH_WORKERS

# More controllers of one kind than this, and their templates are read with one list of the
# kind rather than a GET each (thousands of ReplicaSets at 5,000 nodes: ~16 s of GETs).
LIST_OWNERS = 50
# A cluster of at most this many nodes is small: there the DaemonSets and, from a kind's second
# controller on, the controllers are listed, one request a kind instead of a GET each (at seed
# size 35 requests become 10), each list one page of at most SMALL_LIST objects: a kind with more
# is read with the GETs after all.  Measured on the seed sandbox (docs/benchmarks.md): 16
# ReplicaSet GETs on 8 workers take ~21 ms; a list of 23 ReplicaSets 3 ms, of 123 15 ms, of 523
# 34 ms, of 1,273 94 ms.  Old revisions (revisionHistoryLimit 10) make many per node.
SMALL_CLUSTER = 50
SMALL_LIST_OWNERS = 1
SMALL_LIST = 100


def gather(kube, nodes, *, not_older_than=None, pdbs=None, check_daemonsets=True,
           reads: Optional["LandingReads"] = None, small=False):
    """Fetches, concurrently, the pods of each node (their essentials), the cluster's PDBs
    and whether the DaemonSets owning those pods still exist; a node's DaemonSets are
    looked up as soon as its pods arrive, while other nodes' pods are still coming.

    ``not_older_than``: the node list's resourceVersion, for reads from the API
    server's watch cache (see Kube.list_pods_on_node).  ``pdbs``: a Future of the PDB
    list when the caller started it earlier.  Returns ({node name: pods}, pdbs,
    missing DaemonSets as (namespace, name)).  ``reads`` (LandingReads) is told of each node's
    pods as they come, in this thread, and when the last has come.  ``small`` (a cluster of
    at most SMALL_CLUSTER nodes): the DaemonSets are one list, begun with the first pod of one,
    instead of a GET each (where the list is refused, the GETs).
    """
    by_name = {n["metadata"]["name"]: n for n in nodes}
    names = list(by_name)
    share = essentials.Shared()

    def pods_on(name):
        return [essentials.pod(p, share) for p in kube.list_pods_on_node(name, not_older_than=not_older_than)]

    # FETCH_WORKERS even for a node or two: their pods' DaemonSets are read here too.
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
        pdb_future = pdbs if pdbs is not None else pool.submit(kube.list_pdbs)
        listed: Optional[Future] = None     # a small cluster's list of its DaemonSets
        futures = {pool.submit(pods_on, name): name for name in names}
        pods_by_node: Dict[str, List[Dict[str, Any]]] = {}
        to_check: Set[Tuple[str, str]] = set()
        asked: Dict[Tuple[str, str], Future] = {}       # key: its daemonset_exists GET
        for future in as_completed(futures):
            pods = pods_by_node[futures[future]] = future.result()
            if reads is not None:
                reads.arrived(by_name[futures[future]], pods)
            if check_daemonsets:
                for key in planner.daemonsets_to_check(pods) - to_check:
                    to_check.add(key)
                    if small:
                        listed = listed or pool.submit(kube.list_daemonset_keys, SMALL_LIST)
                    else:
                        asked[key] = pool.submit(kube.daemonset_exists, *key)
        if reads is not None:
            reads.complete()
        missing = _missing_daemonsets(kube, pool, to_check, listed, asked)
        pdbs = pdb_future.result()
    return {name: pods_by_node[name] for name in names}, pdbs, missing


def _missing_daemonsets(kube, pool, keys, listed: Optional[Future], asked):
    """The DaemonSets of ``keys`` that do not exist: out of the list of them all when it was
    begun (``listed``) and could be read, else a GET each (``asked``: those begun already)."""
    if listed is not None:
        try:
            present = listed.result()
        except GpuIsolateError:      # e.g. a role with get and not list: the GETs
            present = None
        if present is not None:      # None: more than a page of them
            return frozenset(keys - present)
    for key in keys - asked.keys():
        asked[key] = pool.submit(kube.daemonset_exists, *key)
    return frozenset(key for key, future in asked.items() if not future.result())


def build_plans(kube, nodes, options, *, check_daemonsets=True, not_older_than=None, pdbs=None,
                landing_check=False, warn=None, run=None, cluster_nodes=None):
    """The nodes' plans.  With ``landing_check``, the pods that would move are judged again
    with where they could land (core.landing) outside ``run``, the names of the run's nodes
    (default: ``nodes``'); what cannot be read for it is said to ``warn`` and left out.
    ``cluster_nodes``: every node, when the caller has just listed them (else listed here); at
    most SMALL_CLUSTER of them, and what a GET each would read is listed instead."""
    warn = warn or (lambda message: None)
    small = cluster_nodes is not None and len(cluster_nodes) <= SMALL_CLUSTER
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as early:
        reads = LandingReads(kube, options, early, small=small) if landing_check else None
        pods_by_node, pdbs, missing = gather(kube, nodes, not_older_than=not_older_than, pdbs=pdbs,
                                             check_daemonsets=check_daemonsets, reads=reads,
                                             small=small)
        every_pod = [p for pods in pods_by_node.values() for p in pods]
        held = resource_claims(kube, every_pod, warn)
        classes = runtime_classes(kube, every_pod, warn)

        plans = [planner.plan_node(node, pods_by_node[node["metadata"]["name"]], pdbs, options,
                                   missing, None, held, runtime_classes=classes) for node in nodes]
        movers = [pod for plan in plans for pod in _movers(plan, pods_by_node[plan.name])]
        if reads is None or not movers:     # no landing check, or nothing for it to judge
            return plans
        run = frozenset(run or (n["metadata"]["name"] for n in nodes))
        cluster = landing_cluster(kube, run, movers, warn, reads, cluster_nodes)
        # Only the movers are decided again: the landing check changes no other decision.
        return [planner.plan_node(node, pods_by_node[plan.name], pdbs, options, missing, cluster,
                                  held, settled=plan.settled, runtime_classes=classes)
                for node, plan in zip(nodes, plans)]


class LandingReads:
    """What the landing check will read, begun while the pods are still arriving (gather).

    Each node's pods are planned as they arrive without PDBs, DaemonSet checks or claims; that
    keeps more pods than the real plan does, never fewer.  Once the pods that would move have
    more than LIST_OWNERS controllers of one kind (SMALL_LIST_OWNERS in a ``small`` cluster),
    the list of that kind's templates starts
    (kube.list_template_pins: at 5,000 nodes the ReplicaSets' 27 pages, ~5 s, are then read
    beside the pods rather than after).  When the last node's pods are in, the GETs of the
    other kinds' controllers and the movers' claims and volumes start, beside the DaemonSet
    GETs rather than after them (at seed size that is two or three round trips fewer); in a
    small cluster the claims start as they are seen, a round trip sooner.

    Only the pods whose controller or claim is new are planned (a decision is the pod's own):
    the rest can start no read.  What the real plan needs and was not begun here,
    landing_cluster reads itself."""

    def __init__(self, kube, options: planner.PlanOptions, pool: ThreadPoolExecutor, *, small=False):
        self.kube, self.options, self.pool = kube, options, pool
        self.small = small
        self.owners: Dict[str, Set[Tuple[str, str]]] = {}
        self.claims: Set[Tuple[str, str]] = set()
        self.started: Dict[str, Future] = {}                  # kind: its template list
        self.controllers: Dict[Tuple[str, str, str], Future] = {}
        self.volumes: Dict[Tuple[str, str], Future] = {}

    def arrived(self, node, pods):
        pods = [p for p in pods if self._could_start_a_read(p)]
        if not pods:
            return
        movers = _movers(planner.plan_node(node, pods, (), self.options), pods)
        new_claims = _claims(movers) - self.claims
        self.claims |= new_claims
        if self.small:
            self._read_volumes(new_claims)
        for namespace, kind, name in _controllers(movers):
            if kind in self.started or kind not in CONTROLLER_PATHS:
                continue
            seen = self.owners.setdefault(kind, set())
            seen.add((namespace, name))
            if len(seen) > (SMALL_LIST_OWNERS if self.small else LIST_OWNERS):
                self.started[kind] = self.pool.submit(self.kube.list_template_pins, kind,
                                                      SMALL_LIST if self.small else None)

    def complete(self):
        """Every node's pods are in: the GETs of the kinds that are not listed, and the claims."""
        for kind, keys in self.owners.items():
            if kind not in self.started:
                for namespace, name in sorted(keys):
                    self.controllers[namespace, kind, name] = self.pool.submit(
                        self.kube.get_controller, namespace, kind, name)
        self._read_volumes(self.claims)

    def _read_volumes(self, claims):
        for claim in sorted(set(claims) - self.volumes.keys()):
            self.volumes[claim] = self.pool.submit(_volume, self.kube, claim)

    def _could_start_a_read(self, pod):
        if _claims([pod]) - self.claims:
            return True
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


def runtime_classes(kube, pods, warn):
    """{name: handler} of the cluster's RuntimeClasses, read (one list) only when some pod names
    one; None when they cannot be read, said once to ``warn`` (the planner then judges a class
    by its name: core/hidden_gpu.py)."""
    # DaemonSet pods (the GPU Operator's own name the nvidia class) are decided before it matters.
    if not any((p.get("spec") or {}).get("runtimeClassName") and not planner.is_daemonset_pod(p)
               for p in pods):
        return {}
    try:
        return kube.list_runtime_classes()
    except GpuIsolateError as exc:
        warn(f"cannot read the RuntimeClasses, so a pod's runtime class is judged by its name "
             f"(one holding 'nvidia' is a GPU runtime): {exc}")
        return None


def _movers(plan, pods):
    """The pods of a plan that would move and have a controller: those the landing check judges."""
    uids = {d.uid for d in plan.movable if d.owner}
    return [p for p in pods if p["metadata"].get("uid") in uids]


def landing_cluster(kube, run, movers, warn, reads: LandingReads, cluster_nodes=None):
    """What the landing check reads for ``movers`` (core.landing.Cluster); ``run`` names the
    run's nodes.  Of each node it keeps what the filters and the GPU-node rules read.
    ``reads``: the LandingReads begun while the pods arrived."""
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
        all_nodes = pool.submit(kube.list_nodes) if cluster_nodes is None else None
        volumes = pool.submit(_volumes, kube, movers, warn, reads.volumes)
        templates = pool.submit(_templates, kube, movers, warn, reads.started, reads.controllers)
        # Nodes the caller listed are already cut (essentials.node): copying them again would
        # hold a second 5,000 small dicts at the limit.
        everything = (list(cluster_nodes) if all_nodes is None else
                      [essentials.landing_node(n) for n in all_nodes.result()])
        return landing.Cluster(
            nodes=tuple(everything), run=run,
            gpu=run | frozenset(n["metadata"]["name"] for n in gpu.gpu_nodes(everything)),
            volumes=volumes.result(), templates=templates.result())


def _claims(pods):
    """(namespace, claim name) of the pods' PersistentVolumeClaims."""
    return {(p["metadata"].get("namespace", ""), v["persistentVolumeClaim"]["claimName"])
            for p in pods for v in p["spec"].get("volumes") or ()
            if (v.get("persistentVolumeClaim") or {}).get("claimName")}


def _volume(kube, key):
    """A claim's bound PV, None while unbound, or landing.MISSING."""
    claim = kube.get_pvc(*key)
    volume = ((claim or {}).get("spec") or {}).get("volumeName")
    bound = ((claim or {}).get("status") or {}).get("phase") == "Bound"
    return landing.MISSING if claim is None else (kube.get_pv(volume) if bound and volume else None)


def _volumes(kube, movers, warn, begun):
    """{(namespace, claim): its bound PV, None while unbound, or landing.MISSING}; None when the
    claims or volumes cannot be read (then the landing check leaves volumes out).  ``begun``:
    {claim: Future of _volume} started earlier."""
    found: Dict[Tuple[str, str], Any] = {}
    try:
        for key in sorted(_claims(movers)):
            found[key] = begun[key].result() if key in begun else _volume(kube, key)
    except GpuIsolateError as exc:
        warn(f"the landing check leaves volumes out: {exc}")
        return None
    return found


def _controllers(pods):
    """(namespace, kind, name) of the pods' controllers."""
    return {(p["metadata"].get("namespace", ""), ref.get("kind", ""), ref.get("name", ""))
            for p in pods for ref in p["metadata"].get("ownerReferences") or ()
            if ref.get("controller")}


def _templates(kube, movers, warn, started, begun):
    """{(namespace, kind, name): nodeName} of the movers' controllers whose template sets one:
    a GET of each controller, or of a kind with more than LIST_OWNERS of them (or whose list
    was begun) one list of that kind (where the list is refused, the GETs).  What was begun
    earlier (LandingReads), the lists in ``started`` {kind: Future} and the GETs in ``begun``
    {key: Future}, is waited for, not read again."""
    owners = sorted(_controllers(movers))
    found = {}
    by_kind: Dict[str, List[Tuple[str, str, str]]] = {}
    for key in owners:
        by_kind.setdefault(key[1], []).append(key)
    single = []
    for kind, keys in by_kind.items():
        if kind not in started and (len(keys) <= LIST_OWNERS or kind not in CONTROLLER_PATHS):
            single += keys
            continue
        try:
            pins = started[kind].result() if kind in started else kube.list_template_pins(kind)
        except GpuIsolateError:
            pins = None         # e.g. no cluster-wide list right: read them one by one
        if pins is None:        # (or more of the kind than a small cluster's page)
            single += keys
            continue
        found.update({key: pins[key[0], key[2]] for key in keys if (key[0], key[2]) in pins})
    try:
        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(single) + 1)) as pool:
            reading = [begun.get(key) or pool.submit(kube.get_controller, *key) for key in single]
            controllers = [future.result() or {} for future in reading]
    except GpuIsolateError as exc:
        warn(f"the landing check leaves controllers' templates out: {exc}")
        return {}
    for key, controller in zip(single, controllers):
        pinned = (((controller.get("spec") or {}).get("template") or {}).get("spec")
                  or {}).get("nodeName")
        if pinned:
            found[key] = pinned
    return found
