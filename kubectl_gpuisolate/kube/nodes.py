"""The GPU nodes a command works on, and the GPU-taint writes on them.

Found and written through the Kube API calls (``kube.api``); warnings are handed to the
caller's ``warn``, which formats them.
"""

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Optional

from ..core import gpu, selectors
from ..core.taints import ALREADY_TAINTED, add_taint, add_taint_write
from ..errors import ConflictError, NotFound

FETCH_WORKERS = 8


def find_nodes(kube, names, requirements, selector_text, *, warn):
    """The target nodes, in the API's order (or the order given by name)."""
    return find_nodes_with_version(kube, names, requirements, selector_text, warn=warn)[0]


class Found(NamedTuple):
    targets: list             # the nodes the command works on
    version: Optional[str]    # the node list's resourceVersion; None when nodes were named
    view: list                # what kubectl's get nodes shows for the same selection
    listed: Optional[list]    # every node, when they were all listed (None when named)


def find_nodes_with_version(kube, names, requirements, selector_text, *, warn):
    """(target nodes, resourceVersion of the node list, or None when nodes were named)."""
    return find_nodes_and_view(kube, names, requirements, selector_text, warn=warn)[:2]


def find_nodes_and_view(kube, names, requirements, selector_text, *, warn):
    """The target nodes and what else the node reads found (``Found``): kubectl's view is
    every node by default, the selection with -l, the named nodes by name.

    Named nodes are read one by one (concurrently): listing a large cluster's
    nodes costs seconds.  Otherwise all nodes are listed once: by default the GPU-node
    rules pick from them; with -l, GPU-capacity nodes the selector misses are warned of.
    """
    if names:
        found = _read_each(names, lambda name: _node_or_none(kube, name))
        missing = [name for name, node in zip(names, found) if node is None]
        if missing:
            raise NotFound(f"node(s) not found: {', '.join(missing)}; check the names with "
                           "'kubectl get nodes'")
        return Found(found, None, found, None)
    all_nodes, version = kube.list_nodes_with_version()
    if requirements is None:    # the default: the GPU-node rules (core.gpu.NODE_RULES)
        nodes = gpu.gpu_nodes(all_nodes)
        if not nodes:
            raise NotFound("no GPU nodes found: no node has a GPU signal (docs/design.md); label "
                           "them or pass -l/--selector or node names")
        return Found(nodes, version, all_nodes, all_nodes)
    nodes = [n for n in all_nodes
             if selectors.matches_string(requirements, n["metadata"].get("labels"))]
    if not nodes:
        raise NotFound(f"no GPU nodes found: no node matches {selector_text}; label them "
                       "or pass another -l/--selector or node names")
    unselected = gpu.unselected_gpu_nodes(all_nodes, nodes)
    if unselected:
        names_text = ", ".join(n["metadata"]["name"] for n in unselected)
        warn(f"node(s) with GPU capacity are not selected by {selector_text}: {names_text}")
    return Found(nodes, version, nodes, all_nodes)


def _read_each(names, read):
    """``read(name)`` for every name, FETCH_WORKERS at a time, in the order of ``names``."""
    if not names:
        return []
    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(names))) as pool:
        return list(pool.map(read, names))


def _node_or_none(kube, name):
    try:
        return kube.get_node(name)
    except NotFound:
        return None


def check_conflicts(nodes, taint, *, overwrite):
    """Refuses before any write when a node has the key and effect with another value."""
    for node in nodes:
        try:
            add_taint((node.get("spec") or {}).get("taints"), taint, overwrite=overwrite)
        except ConflictError as exc:
            raise ConflictError(f"node {node['metadata']['name']} {exc}") from None


def apply_taint(kube, nodes, taint, *, overwrite, dry_run):
    """Taints the nodes (shared with ``evacuate --taint-first``), yielding ``(updated node, verb)``
    as each is written, so that the caller can report each write before the next starts
    (an error midway leaves the earlier ones reported).  The verbs are core.taints'.

    Call ``check_conflicts`` first, so that a value conflict on any node leaves all of them
    untouched; each write still refuses one that appeared since.
    """
    for node in nodes:
        name = node["metadata"]["name"]
        try:
            updated, verb = kube.update_node_taints(
                name, lambda current: add_taint_write(current, taint, overwrite=overwrite),
                dry_run=dry_run)
        except ConflictError as exc:
            raise ConflictError(f"node {name} {exc}") from None
        yield updated, verb


def taken_off(kube, names, taint, *, overwrite):
    """The nodes among ``names``, as read now, where ``taint`` is no longer as it was written:
    gone, or (with ``overwrite``) its value changed back.  Read concurrently."""
    def gone(name):
        node = kube.get_node(name)
        try:
            kept = add_taint((node.get("spec") or {}).get("taints"), taint,
                             overwrite=overwrite)[1] == ALREADY_TAINTED
        except ConflictError:       # another value without --overwrite: not ours any more
            kept = False
        return None if kept else node

    return [node for node in _read_each(names, gone) if node is not None]
