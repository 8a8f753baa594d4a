"""kubectl's plugin completion protocol, answered over the argparse parser.

Shell completion has two ways in and one set of completers (``completers``):

* Through kubectl (>= 1.26): ``kubectl gpuisolate <TAB>`` makes kubectl run
  ``kubectl_complete-gpuisolate ARG... WORD`` (this program under a second
  name, a link next to it).  It prints one ``value<TAB>description`` line per
  candidate, then ``:<directive>`` (cobra's ShellCompDirective).
  ``serve_kubectl`` implements that over the argparse parser, without
  argcomplete.
* Direct: ``kubectl-gpuisolate <TAB>`` with the script that ``completion
  bash|zsh`` prints; argcomplete drives the parser (``shell.autocomplete``).

This module answers subcommands, flags (once a ``-`` is typed), choices, and
whatever the completers give for a flag's value or a positional.
"""

import argparse
import os
import sys

from .completers import _BY_DEST, _FILE_DESTS, _subcommands, attach_completers

HELPER_PREFIX = "kubectl_complete-"

# cobra's ShellCompDirective bits
DEFAULT, ERROR, NO_SPACE, NO_FILE_COMP = 0, 1, 2, 4


def is_kubectl_helper(argv0, args):
    """True when invoked as kubectl's completion helper (a link named
    ``kubectl_complete-...``) or as ``kubectl-gpuisolate __complete ...``."""
    return (os.path.basename(argv0 or "").startswith(HELPER_PREFIX)
            or args[:1] in (["__complete"], ["__completeNoDesc"]))


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


