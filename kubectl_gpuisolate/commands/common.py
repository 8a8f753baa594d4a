"""What several subcommands share: node-selection flags, finding the GPU nodes,
and gathering the facts the planner needs (pods, PDBs, DaemonSets)."""

import sys
from concurrent.futures import ThreadPoolExecutor

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
    """The target nodes, in the API's order (or the order given by name).

    All nodes are listed once so that GPU-capacity nodes without the GPU label
    can be reported, and so names and selectors resolve from one read.
    """
    all_nodes = kube.list_nodes()
    if names:
        by_name = {n["metadata"]["name"]: n for n in all_nodes}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise NotFound(f"node(s) not found: {', '.join(missing)}; check the names with "
                           "'kubectl get nodes'")
        nodes = [by_name[n] for n in names]
    else:
        nodes = [n for n in all_nodes
                 if selectors.matches_string(requirements, n["metadata"].get("labels"))]
        if not nodes:
            raise NotFound(f"no GPU nodes found: no node matches {selector_text}; label them "
                           "or pass -l/--selector or node names")
    unlabelled = gpu.unlabelled_gpu_nodes(all_nodes)
    if unlabelled and not names:
        names_text = ", ".join(n["metadata"]["name"] for n in unlabelled)
        warn(f"node(s) with GPU capacity but without {gpu.GPU_PRESENT_LABEL}=true are not "
             f"selected: {names_text}", warn_stream or sys.stderr)
    return nodes


def gather(kube, nodes):
    """Fetches, concurrently, the pods of each node and the cluster's PDBs.

    Returns ({node name: pods}, pdbs, missing DaemonSets).
    """
    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(nodes) + 1)) as pool:
        pdb_future = pool.submit(kube.list_pdbs)
        pod_futures = {n["metadata"]["name"]: pool.submit(kube.list_pods_on_node, n["metadata"]["name"])
                       for n in nodes}
        pods_by_node = {name: future.result() for name, future in pod_futures.items()}
        pdbs = pdb_future.result()
    return pods_by_node, pdbs


def missing_daemonsets(kube, pods_by_node, options):
    """DaemonSets that own pods which do not tolerate the taint and no longer exist."""
    candidates = set()
    for node_pods in pods_by_node.values():
        candidates |= planner.daemonsets_to_check(node_pods)
    if not candidates:
        return frozenset()
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
        exists = dict(zip(candidates, pool.map(lambda key: kube.daemonset_exists(*key), candidates)))
    return frozenset(key for key, present in exists.items() if not present)


def build_plans(kube, nodes, options, *, check_daemonsets=True):
    pods_by_node, pdbs = gather(kube, nodes)
    missing = missing_daemonsets(kube, pods_by_node, options) if check_daemonsets else frozenset()
    return [planner.plan_node(node, pods_by_node[node["metadata"]["name"]], pdbs, options, missing)
            for node in nodes]
