"""The completers: what may follow a flag or fill a positional, shared by both ways in
(kubectl's helper protocol and argcomplete, which calls them with keywords).

Kubeconfig contexts, clusters and users are read from the files (no ``kubernetes``
import); GPU node names come from the cluster within a 1 s budget; taint effects follow
``KEY[=VALUE]:``.
"""

import argparse
import threading

from ..core import gpu
from ..core.taints import EFFECTS

NODE_TIMEOUT = 1.0  # seconds for the whole node lookup (connect, TLS, list)

_EFFECT_HELP = {
    "NoSchedule": "new pods that do not tolerate it are not scheduled",
    "PreferNoSchedule": "the scheduler avoids the node for pods that do not tolerate it",
    "NoExecute": "also evicts running pods that do not tolerate it",
}



def _given(parsed_args, name):
    return getattr(parsed_args, name, None) if parsed_args is not None else None


def complete_contexts(prefix="", parsed_args=None, **_):
    from ..kube.config import context_names

    return {name: "" for name in context_names(_given(parsed_args, "kubeconfig"))
            if name.startswith(prefix)}


def _kubeconfig_section(section, prefix, parsed_args):
    from ..errors import ConfigError
    from ..kube.config import find_paths, merge

    try:
        names = getattr(merge(find_paths(_given(parsed_args, "kubeconfig"))), section)
    except ConfigError:
        return {}
    return {name: "" for name in sorted(names) if name.startswith(prefix)}


def complete_clusters(prefix="", parsed_args=None, **_):
    return _kubeconfig_section("clusters", prefix, parsed_args)


def complete_users(prefix="", parsed_args=None, **_):
    return _kubeconfig_section("users", prefix, parsed_args)


def _node_summary(node):
    count = gpu.gpu_count(node)
    taints = (node.get("spec") or {}).get("taints") or ()
    tainted = any(t.get("key") == "nvidia.com/gpu" for t in taints)
    parts = [f"{count} GPU" if count else "GPU node", "GPU taint" if tainted else "no GPU taint"]
    if (node.get("spec") or {}).get("unschedulable"):
        parts.append("cordoned")
    return ", ".join(parts)


def list_gpu_nodes(parsed_args=None, timeout=NODE_TIMEOUT):
    """{name: summary} of the nodes labelled nvidia.com/gpu.present=true, or {}
    on any error or after ``timeout`` seconds (completion never waits long)."""
    from ..flags import ConnectionOptions

    options = ConnectionOptions(
        kubeconfig=_given(parsed_args, "kubeconfig"), context=_given(parsed_args, "context"),
        cluster=_given(parsed_args, "cluster"), user=_given(parsed_args, "user"),
        request_timeout=timeout, as_user=_given(parsed_args, "as_user"),
        as_groups=tuple(_given(parsed_args, "as_groups") or ()))
    found = {}

    def fetch():
        from ..kube import connect

        kube = connect(options, pool_size=1)
        nodes = kube.list_nodes(gpu.DEFAULT_NODE_SELECTOR, limit=500, retry=False)
        found.update({node["metadata"]["name"]: _node_summary(node) for node in nodes})

    def guarded():
        try:
            fetch()
        except Exception:  # completion shows nothing rather than an error
            pass

    worker = threading.Thread(target=guarded, daemon=True)
    worker.start()
    worker.join(timeout)
    return dict(found) if not worker.is_alive() else {}


def complete_nodes(prefix="", parsed_args=None, **_):
    taken = set(_given(parsed_args, "nodes") or ())
    return {name: summary for name, summary in sorted(list_gpu_nodes(parsed_args).items())
            if name.startswith(prefix) and name not in taken}


def complete_taint(prefix="", action=None, **_):
    """``KEY[=VALUE]:EFFECT``: the default, or the effects once ``KEY...:`` is typed."""
    if ":" in prefix:
        head = prefix.rsplit(":", 1)[0]
        return {f"{head}:{effect}": _EFFECT_HELP[effect] for effect in EFFECTS
                if f"{head}:{effect}".startswith(prefix)}
    default = getattr(action, "default", None)
    suggestions = [default] if isinstance(default, str) else []
    return {s: "the default" for s in suggestions if s.startswith(prefix)}


_BY_DEST = {
    "context": complete_contexts,
    "cluster": complete_clusters,
    "user": complete_users,
    "nodes": complete_nodes,
    "taint": complete_taint,
}
_FILE_DESTS = {"kubeconfig"}


def _subcommands(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def attach_completers(parser):
    """Sets ``action.completer`` (argcomplete's hook) on every action of the
    parser and its subparsers whose destination has a completer above."""
    for action in parser._actions:
        if action.dest in _BY_DEST and not hasattr(action, "completer"):
            action.completer = _BY_DEST[action.dest]
    sub = _subcommands(parser)
    if sub is not None:
        for child in sub.choices.values():
            attach_completers(child)
    return parser
