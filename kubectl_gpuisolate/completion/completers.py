"""The completers: what may follow a flag or fill a positional, shared by both ways in
(kubectl's helper protocol and argcomplete, which calls them with keywords).

Kubeconfig contexts, clusters and users are read from the files (no ``kubernetes``
import); GPU node names come from the cluster within a 1 s budget;
taint effects follow ``KEY[=VALUE]:``.  Each is attached where its flag is defined
(``parser.add_argument(...).completer = ...``): flags.py, commands/.
"""

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


def complete_files(prefix="", **kwargs):
    """Marks a file argument (--kubeconfig): kubectl's helper leaves it to the shell's own
    file completion; argcomplete completes file names, as for an argument without a completer."""
    from argcomplete.completers import FilesCompleter

    return FilesCompleter()(prefix, **kwargs)


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
        body = kube.request("GET", "/api/v1/nodes", retry=False, what="listing GPU nodes",
                            params={"labelSelector": gpu.DEFAULT_NODE_SELECTOR, "limit": 500}).json()
        found.update({node["metadata"]["name"]: _node_summary(node) for node in body.get("items") or ()})

    def guarded():
        try:
            fetch()
        except Exception:  # completion shows nothing rather than an error
            pass

    worker = threading.Thread(target=guarded, daemon=True)
    worker.start()
    worker.join(timeout)
    return dict(found) if not worker.is_alive() else {}


def complete_nodes(prefix="", action=None, parsed_args=None, **_):
    """GPU node names not given yet."""
    taken = set(_given(parsed_args, action.dest) or ()) if action is not None else set()
    return {name: summary for name, summary in sorted(list_gpu_nodes(parsed_args).items())
            if name.startswith(prefix) and name not in taken}


def complete_taint(prefix="", action=None, can_continue=False, **_):
    """``KEY[=VALUE]:EFFECT``: the default, or the effects once ``KEY...:`` is typed.
    With ``can_continue`` (kubectl's helper, which can leave the cursor after a ':'), a key
    typed without its effect gets ``KEY...:``; argcomplete's bash splits words at ':'."""
    if ":" in prefix:
        head = prefix.rsplit(":", 1)[0]
        return {f"{head}:{effect}": _EFFECT_HELP[effect] for effect in EFFECTS
                if f"{head}:{effect}".startswith(prefix)}
    default = getattr(action, "default", None)
    suggestions = [default] if isinstance(default, str) else []
    found = {s: "the default" for s in suggestions if s.startswith(prefix)}
    if can_continue and not found and prefix:
        found = {prefix + ":": "then the effect"}
    return found
