"""Shell completion, two ways in, one set of completers.

* Through kubectl (>= 1.26): ``kubectl gpuisolate <TAB>`` makes kubectl run
  ``kubectl_complete-gpuisolate ARG... WORD`` (this program under a second
  name, a link next to it).  It prints one ``value<TAB>description`` line per
  candidate, then ``:<directive>`` (cobra's ShellCompDirective).
  ``serve_kubectl`` implements that over the argparse parser, without
  argcomplete.
* Direct: ``kubectl-gpuisolate <TAB>`` with the script that ``completion
  bash|zsh`` prints; argcomplete drives the parser (``autocomplete``).

Completers: subcommands, flags (once a ``-`` is typed), GPU node names from the
cluster (a 1 s budget), kubeconfig contexts/clusters/users (read from the files,
no ``kubernetes`` import), taint effects after ``KEY[=VALUE]:``, and choices.
"""

import argparse
import os
import sys
import threading

from . import gpu
from .taints import EFFECTS

HELPER_PREFIX = "kubectl_complete-"
NODE_TIMEOUT = 1.0  # seconds for the whole node lookup (connect, TLS, list)

# cobra's ShellCompDirective bits
DEFAULT, ERROR, NO_SPACE, NO_FILE_COMP = 0, 1, 2, 4

_EFFECT_HELP = {
    "NoSchedule": "new pods that do not tolerate it are not scheduled",
    "PreferNoSchedule": "the scheduler avoids the node for pods that do not tolerate it",
    "NoExecute": "also evicts running pods that do not tolerate it",
}


def is_kubectl_helper(argv0, args):
    """True when invoked as kubectl's completion helper (a link named
    ``kubectl_complete-...``) or as ``kubectl-gpuisolate __complete ...``."""
    return (os.path.basename(argv0 or "").startswith(HELPER_PREFIX)
            or args[:1] in (["__complete"], ["__completeNoDesc"]))


# -- completers (shared by both ways in; argcomplete calls them with keywords) --------------------

def _given(parsed_args, name):
    return getattr(parsed_args, name, None) if parsed_args is not None else None


def complete_contexts(prefix="", parsed_args=None, **_):
    from .kubeconfig import context_names

    return {name: "" for name in context_names(_given(parsed_args, "kubeconfig"))
            if name.startswith(prefix)}


def _kubeconfig_section(section, prefix, parsed_args):
    from .errors import ConfigError
    from .kubeconfig import find_paths, merge

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
    from .flags import ConnectionOptions

    options = ConnectionOptions(
        kubeconfig=_given(parsed_args, "kubeconfig"), context=_given(parsed_args, "context"),
        cluster=_given(parsed_args, "cluster"), user=_given(parsed_args, "user"),
        request_timeout=timeout, as_user=_given(parsed_args, "as_user"),
        as_groups=tuple(_given(parsed_args, "as_groups") or ()))
    found = {}

    def fetch():
        from .kube import connect

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


# -- kubectl's plugin completion protocol ----------------------------------------------------------

def _takes_value(action):
    return action.nargs != 0 and action.option_strings


def _help_line(parser, action):
    text = action.help
    if not text or text == argparse.SUPPRESS:
        return ""
    try:
        text = parser._get_formatter()._expand_help(action)
    except (KeyError, TypeError, ValueError):
        pass
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77].rsplit(" ", 1)[0] + " ..."


def _find_option(parser, word):
    """(action, attached value or None) for an option word, or (None, None)."""
    table = parser._option_string_actions
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        action = table.get(name)
        return action, (value if eq else None)
    if word[:2] in table:
        action = table[word[:2]]
        rest = word[2:]
        if _takes_value(action) and rest:
            return action, rest[1:] if rest.startswith("=") else rest
        return action, None
    return None, None


class _State:
    def __init__(self, parser):
        self.parser = parser
        self.command = None
        self.pending = None        # an option waiting for its value
        self.values = argparse.Namespace()
        self.positionals = []
        self.seen = set()          # options given (to hide them from the flag list)
        self.dashdash = False

    def record(self, action, value):
        if isinstance(action, argparse._AppendAction):
            setattr(self.values, action.dest, (getattr(self.values, action.dest, None) or []) + [value])
        else:
            setattr(self.values, action.dest, value)


def _walk(parser, words):
    state = _State(parser)
    for word in words:
        if state.pending is not None:
            state.record(state.pending, word)
            state.pending = None
            continue
        if word == "--" and not state.dashdash:
            state.dashdash = True
            continue
        if word.startswith("-") and len(word) > 1 and not state.dashdash:
            action, value = _find_option(state.parser, word)
            if action is None:
                continue
            state.seen.add(action)
            if _takes_value(action):
                if value is None:
                    state.pending = action
                else:
                    state.record(action, value)
            continue
        sub = _subcommands(state.parser)
        if state.command is None and sub is not None and word in sub.choices:
            state.command, state.parser = word, sub.choices[word]
            continue
        state.positionals.append(word)
    state.values.nodes = list(state.positionals)
    return state


def _values(state, action, prefix):
    """Candidates for an option's or positional's value, and the directive."""
    if action.dest in _FILE_DESTS:
        return {}, DEFAULT  # let the shell complete file names
    completer = getattr(action, "completer", None) or _BY_DEST.get(action.dest)
    if completer is not None:
        found = completer(prefix=prefix, action=action, parser=state.parser,
                          parsed_args=state.values)
        directive = NO_FILE_COMP
        if action.dest == "taint" and not found and prefix and ":" not in prefix:
            found, directive = {prefix + ":": "then the effect"}, NO_FILE_COMP | NO_SPACE
        return dict(found), directive
    if action.choices:
        return {str(c): "" for c in action.choices if str(c).startswith(prefix)}, NO_FILE_COMP
    return {}, NO_FILE_COMP


def _positional_action(parser, index):
    count = 0
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in ("*", "+", argparse.REMAINDER) or count == index:
            return action
        count += 1 if action.nargs in (None, "?") else (action.nargs or 1)
    return None


def _flags(state, prefix):
    found = {}
    for action in state.parser._actions:
        if action.help == argparse.SUPPRESS or not action.option_strings:
            continue
        if action in state.seen and not isinstance(action, argparse._AppendAction):
            continue
        for option in action.option_strings:
            if option.startswith(prefix):
                found[option] = _help_line(state.parser, action)
    return found


def complete_words(parser, words, current):
    """The candidates ({value: description}) and the directive for ``current``,
    the word being completed after ``words``."""
    attach_completers(parser)
    state = _walk(parser, words)
    if state.pending is not None:
        return _values(state, state.pending, current)
    if current.startswith("-") and not state.dashdash:
        if current.startswith("--") and "=" in current:
            action, value = _find_option(state.parser, current)
            if action is None or not _takes_value(action):
                return {}, NO_FILE_COMP
            return _values(state, action, value or "")
        return _flags(state, current), NO_FILE_COMP
    sub = _subcommands(state.parser)
    if state.command is None and sub is not None:
        helps = {a.dest: a.help for a in sub._choices_actions}
        return {name: " ".join((helps.get(name) or "").split()) for name in sub.choices
                if name.startswith(current)}, NO_FILE_COMP
    action = _positional_action(state.parser, len(state.positionals))
    if action is None:
        return {}, NO_FILE_COMP
    return _values(state, action, current)


def serve_kubectl(parser, args, stdout=None):
    """Answers kubectl's ``kubectl_complete-<plugin>`` call; always returns 0."""
    stdout = stdout or sys.stdout
    descriptions = True
    if args[:1] in (["__complete"], ["__completeNoDesc"]):
        descriptions, args = args[0] == "__complete", args[1:]
    words, current = (list(args[:-1]), args[-1]) if args else ([], "")
    try:
        found, directive = complete_words(parser, words, current)
    except Exception:  # never break the user's shell; an Error directive shows nothing
        found, directive = {}, ERROR
    lines = []
    for value, text in found.items():
        text = " ".join(str(text or "").split())
        lines.append(f"{value}\t{text}" if descriptions and text else value)
    lines.append(f":{directive}")
    stdout.write("\n".join(lines) + "\n")
    stdout.flush()
    return 0


# -- direct completion (argcomplete) ---------------------------------------------------------------

def autocomplete(parser):
    """Called by cli.main when ``_ARGCOMPLETE`` is set (the shell script that
    ``completion bash|zsh`` prints); exits when it has answered."""
    import argcomplete

    attach_completers(parser)
    argcomplete.autocomplete(parser, always_complete_options=False)


def shellcode(shell, command="kubectl-gpuisolate"):
    import argcomplete

    return argcomplete.shellcode([command], shell=shell)
