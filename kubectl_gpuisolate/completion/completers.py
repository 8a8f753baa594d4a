"""The completers: what may follow a flag or fill a positional, shared by both ways in
(kubectl's helper protocol and argcomplete, which calls them with keywords).

Kubeconfig contexts, clusters and users are read from the files (no ``kubernetes``
import); GPU node names come from the cluster (``KubeApi.list_nodes``) within a 1 s budget;
taint effects follow ``KEY[=VALUE]:``.  A command's completers are attached where its flag
is defined (``parser.add_argument(...).completer = ...``, commands/); the shared flags' ones
are registered here by flag name (``flags.COMPLETERS``), since flags.py may not import this
package.
"""

import argparse
import threading

from ..core import gpu
from ..core.taints import DEFAULT_TAINT, EFFECTS, Taint, gpu_taints_on, parse_taint, parse_taint_ref
from ..errors import UsageError
from ..flags import COMPLETERS

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


def _parse_gpu_taint(text):
    """The taint ``text`` names: a Taint (``KEY[=VALUE]:EFFECT``) or untaint's TaintRef
    (``KEY[:EFFECT]``); the default taint when it names neither (e.g. half typed)."""
    for parse in (parse_taint, parse_taint_ref):
        try:
            return parse(text)
        except UsageError:
            pass
    return parse_taint(DEFAULT_TAINT)


def _has_gpu_taint(taints, wanted):
    if isinstance(wanted, Taint):
        return bool(gpu_taints_on(taints, wanted))  # key and effect, any value
    return any(wanted.matches(taint) for taint in taints)


def _node_summary(node, wanted):
    count = gpu.gpu_count(node)
    spec = node.get("spec") or {}
    tainted = _has_gpu_taint(spec.get("taints") or (), wanted)
    parts = [f"{count} GPU" if count else "GPU node", "GPU taint" if tainted else "no GPU taint"]
    if spec.get("unschedulable"):
        parts.append("cordoned")
    return ", ".join(parts)


def list_gpu_nodes(parsed_args=None, timeout=NODE_TIMEOUT, gpu_taint=DEFAULT_TAINT):
    """{name: summary} of the first page of nodes that core.gpu's rules call GPU nodes, or {}
    on any error or after ``timeout`` seconds (completion never waits long).  The
    summary says whether a node carries ``gpu_taint`` (see ``_parse_gpu_taint``)."""
    wanted = _parse_gpu_taint(gpu_taint)
    found = {}

    def fetch():
        from ..flags import connection_options
        from ..kube import connect

        options = connection_options(parsed_args or argparse.Namespace(), request_timeout=timeout)
        kube = connect(options, pool_size=1)
        nodes = gpu.gpu_nodes(kube.list_nodes(limit=500, retry=False))
        found.update({node["metadata"]["name"]: _node_summary(node, wanted) for node in nodes})

    def guarded():
        try:
            fetch()
        except Exception:  # completion shows nothing rather than an error
            pass

    worker = threading.Thread(target=guarded, daemon=True)
    worker.start()
    worker.join(timeout)
    return dict(found) if not worker.is_alive() else {}


def complete_nodes(prefix="", action=None, parser=None, parsed_args=None, **_):
    """GPU node names not given yet.  The summaries judge the GPU taint by this command
    line's option that completes as a taint (--gpu-taint), typed or its default."""
    taken = set(_given(parsed_args, action.dest) or ()) if action is not None else set()
    command_line = getattr(parser, "command_line", None)  # a registry.RecordingParser's record
    gpu_taint = command_line.value_of(complete_taint, parsed_args) if command_line else None
    if not isinstance(gpu_taint, str):
        gpu_taint = DEFAULT_TAINT
    nodes = list_gpu_nodes(parsed_args, gpu_taint=gpu_taint)
    return {name: summary for name, summary in sorted(nodes.items())
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


COMPLETERS.update({"--kubeconfig": complete_files, "--context": complete_contexts,
                   "--cluster": complete_clusters, "--user": complete_users,
                   "--certificate-authority": complete_files, "--client-certificate": complete_files,
                   "--client-key": complete_files})
