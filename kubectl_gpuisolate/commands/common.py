"""What several subcommands share: node-selection flags, finding the GPU nodes,
and gathering the facts the planner needs (pods, PDBs, DaemonSets)."""

import sys
from concurrent.futures import ThreadPoolExecutor, as_completed

from .. import gpu, planner, selectors
from ..errors import NotFound, UsageError
from ..output import warn

FETCH_WORKERS = 8


def add_node_flags(parser):
    parser.add_argument("nodes", nargs="*", metavar="NODE",
                        help="node names (default: every node labelled "
                             f"{gpu.DEFAULT_NODE_SELECTOR})")
    parser.add_argument("-l", "--selector", metavar="SELECTOR",
                        help=f"node label selector (default: {gpu.DEFAULT_NODE_SELECTOR})")


def node_selection(args):
    """Validates the node flags; returns (names, parsed selector, selector text)."""
    names = list(dict.fromkeys(args.nodes or ()))
    if names and args.selector:
        raise UsageError("cannot specify both node names and --selector")
    text = args.selector or (None if names else gpu.DEFAULT_NODE_SELECTOR)
    return names, (selectors.parse(text) if text else None), text


def find_nodes(kube, names, requirements, selector_text, *, warn_stream=None):
    """The target nodes, in the API's order (or the order given by name)."""
    return find_nodes_with_version(kube, names, requirements, selector_text,
                                   warn_stream=warn_stream)[0]


def find_nodes_with_version(kube, names, requirements, selector_text, *, warn_stream=None):
    """(target nodes, resourceVersion of the node list, or None when nodes were named).

    Named nodes are read one by one (concurrently): listing a large cluster's
    nodes costs seconds.  Otherwise all nodes are listed once, so that
    GPU-capacity nodes without the GPU label can be reported.
    """
    if names:
        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(names))) as pool:
            found = list(pool.map(lambda name: _node_or_none(kube, name), names))
        missing = [name for name, node in zip(names, found) if node is None]
        if missing:
            raise NotFound(f"node(s) not found: {', '.join(missing)}; check the names with "
                           "'kubectl get nodes'")
        return found, None
    all_nodes, version = kube.list_nodes_with_version()
    nodes = [n for n in all_nodes
             if selectors.matches_string(requirements, n["metadata"].get("labels"))]
    if not nodes:
        raise NotFound(f"no GPU nodes found: no node matches {selector_text}; label them "
                       "or pass -l/--selector or node names")
    unlabelled = gpu.unlabelled_gpu_nodes(all_nodes)
    if unlabelled:
        names_text = ", ".join(n["metadata"]["name"] for n in unlabelled)
        warn(f"node(s) with GPU capacity but without {gpu.GPU_PRESENT_LABEL}=true are not "
             f"selected: {names_text}", warn_stream or sys.stderr)
    return nodes, version


def _node_or_none(kube, name):
    try:
        return kube.get_node(name)
    except NotFound:
        return None


# What the planner reads of a pod (planner.decide, gpu.pod_*, taints.tolerates_all,
# selectors for PDBs).  Keeping only this, as each node's pods arrive, holds a large
# cluster's GPU nodes in a fraction of the memory of whole pods.
_POD_METADATA = ("name", "namespace", "uid", "labels", "ownerReferences", "deletionTimestamp")
_POD_SPEC = ("nodeName", "tolerations", "resourceClaims")
_MIRROR = "kubernetes.io/config.mirror"


def essentials(pod):
    """The planner's part of a pod, as a plain dict of the same shape."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    slim_meta = {k: meta[k] for k in _POD_METADATA if k in meta}
    annotations = meta.get("annotations") or {}
    if _MIRROR in annotations:
        slim_meta["annotations"] = {_MIRROR: annotations[_MIRROR]}
    slim_spec = {k: spec[k] for k in _POD_SPEC if k in spec}
    volumes = [v for v in spec.get("volumes") or () if "emptyDir" in v]
    if volumes:
        slim_spec["volumes"] = volumes
    for key in ("containers", "initContainers"):
        if spec.get(key):
            slim_spec[key] = [{"resources": c.get("resources") or {}} for c in spec[key]]
    slim = {"metadata": slim_meta, "spec": slim_spec}
    phase = (pod.get("status") or {}).get("phase")
    if phase:
        slim["status"] = {"phase": phase}
    return slim


def gather(kube, nodes, *, not_older_than=None, pdbs=None, check_daemonsets=True):
    """Fetches, concurrently, the pods of each node (their essentials), the cluster's PDBs
    and whether the DaemonSets owning those pods still exist; a node's DaemonSets are
    looked up as soon as its pods arrive, while other nodes' pods are still coming.

    ``not_older_than``: the node list's resourceVersion, for reads from the API
    server's watch cache (see Kube.list_pods_on_node).  ``pdbs``: a Future of the PDB
    list when the caller started it earlier.  Returns ({node name: pods}, pdbs,
    missing DaemonSets as (namespace, name)).
    """
    names = [n["metadata"]["name"] for n in nodes]

    def pods_on(name):
        return [essentials(p) for p in kube.list_pods_on_node(name, not_older_than=not_older_than)]

    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(nodes) + 1)) as pool:
        pdb_future = pdbs if pdbs is not None else pool.submit(kube.list_pdbs)
        futures = {pool.submit(pods_on, name): name for name in names}
        pods_by_node, ds_futures = {}, {}
        for future in as_completed(futures):
            pods = pods_by_node[futures[future]] = future.result()
            if check_daemonsets:
                for key in planner.daemonsets_to_check(pods) - ds_futures.keys():
                    ds_futures[key] = pool.submit(kube.daemonset_exists, *key)
        missing = frozenset(key for key, f in ds_futures.items() if not f.result())
        pdbs = pdb_future.result()
    return {name: pods_by_node[name] for name in names}, pdbs, missing


def build_plans(kube, nodes, options, *, check_daemonsets=True, not_older_than=None, pdbs=None):
    pods_by_node, pdbs, missing = gather(kube, nodes, not_older_than=not_older_than, pdbs=pdbs,
                                         check_daemonsets=check_daemonsets)
    return [planner.plan_node(node, pods_by_node[node["metadata"]["name"]], pdbs, options, missing)
            for node in nodes]
