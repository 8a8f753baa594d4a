"""kubectl's plugin completion protocol, answered from the command line that the parser
recorded as it was built (``registry``), not from argparse's internals.

Shell completion has two ways in and one set of completers (``completers``):

* Through kubectl (>= 1.26): ``kubectl gpuisolate <TAB>`` makes kubectl run
  ``kubectl_complete-gpuisolate ARG... WORD`` (this program under a second
  name, a link next to it).  It prints one ``value<TAB>description`` line per
  candidate, then ``:<directive>`` (cobra's ShellCompDirective).
  ``serve_kubectl`` implements that, without argcomplete.
* Direct: ``kubectl-gpuisolate <TAB>`` with the script that ``completion
  bash|zsh`` prints; argcomplete drives the parser (``shell.autocomplete``).

This module answers subcommands, flags (once a ``-`` is typed), choices, and
whatever the completers give for a flag's value or a positional.
"""

import argparse
import os
import sys

from .completers import complete_files

HELPER_PREFIX = "kubectl_complete-"

# cobra's ShellCompDirective bits
DEFAULT, ERROR, NO_SPACE, NO_FILE_COMP = 0, 1, 2, 4


def is_kubectl_helper(argv0, args):
    """True when invoked as kubectl's completion helper (a link named
    ``kubectl_complete-...``) or as ``kubectl-gpuisolate __complete ...``."""
    return (os.path.basename(argv0 or "").startswith(HELPER_PREFIX)
            or args[:1] in (["__complete"], ["__completeNoDesc"]))


# -- kubectl's plugin completion protocol, over the parser's recorded command line (registry.py) ----

def _help_line(argument):
    text = argument.help
    if not text or argument.hidden:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77].rsplit(" ", 1)[0] + " ..."


def _find_option(command_line, word):
    """(option, attached value or None) for an option word, or (None, None)."""
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        return command_line.option(name), (value if eq else None)
    option = command_line.option(word[:2])
    if option is None:
        return None, None
    rest = word[2:]
    if option.takes_value and rest:
        return option, rest[1:] if rest.startswith("=") else rest
    return option, None


class _State:
    def __init__(self, command_line):
        self.command_line = command_line
        self.command = None
        self.pending = None        # an option waiting for its value
        self.values = argparse.Namespace()  # the completers' parsed_args, as from argcomplete
        self.positionals = []
        self.seen = set()          # options given (to hide them from the flag list)
        self.dashdash = False

    def record(self, option, value):
        if option.repeats:
            value = (getattr(self.values, option.dest, None) or []) + [value]
        setattr(self.values, option.dest, value)

    def assign_positionals(self):
        """Gives the positional words to the positionals' destinations, as argparse would."""
        words = list(self.positionals)
        for positional in self.command_line.positionals:
            take = len(words) if positional.many else positional.width
            taken, words = words[:take], words[take:]
            single = not positional.many and positional.width == 1
            setattr(self.values, positional.dest, (taken[0] if taken else None) if single else taken)


def _walk(command_line, words):
    state = _State(command_line)
    for word in words:
        if state.pending is not None:
            state.record(state.pending, word)
            state.pending = None
            continue
        if word == "--" and not state.dashdash:
            state.dashdash = True
            continue
        if word.startswith("-") and len(word) > 1 and not state.dashdash:
            option, value = _find_option(state.command_line, word)
            if option is None:
                continue
            state.seen.add(option)
            if option.takes_value:
                if value is None:
                    state.pending = option
                else:
                    state.record(option, value)
            continue
        if state.command is None and word in state.command_line.commands:
            state.command, state.command_line = word, state.command_line.commands[word].command_line
            continue
        state.positionals.append(word)
    state.assign_positionals()
    return state


def _values(state, argument, prefix):
    """Candidates for an option's or positional's value, and the directive."""
    completer = argument.completer
    if completer is complete_files:
        return {}, DEFAULT  # let the shell complete file names
    if completer is not None:
        found = dict(completer(prefix=prefix, action=argument.action, parser=state.command_line.parser,
                               parsed_args=state.values, can_continue=True))
        # A candidate ending in ':' is the start of a longer word (KEY: before its EFFECT).
        open_ended = found and all(value.endswith(":") for value in found)
        return found, NO_FILE_COMP | (NO_SPACE if open_ended else 0)
    if argument.choices:
        return {str(c): "" for c in argument.choices if str(c).startswith(prefix)}, NO_FILE_COMP
    return {}, NO_FILE_COMP


def _positional(command_line, index):
    count = 0
    for positional in command_line.positionals:
        if positional.many or count == index:
            return positional
        count += positional.width
    return None


def _flags(state, prefix):
    found = {}
    for option in state.command_line.options:
        if option.hidden or (option in state.seen and not option.repeats):
            continue
        for string in option.option_strings:
            if string.startswith(prefix):
                found[string] = _help_line(option)
    return found


def complete_words(parser, words, current):
    """The candidates ({value: description}) and the directive for ``current``,
    the word being completed after ``words``, on a ``registry.RecordingParser``."""
    state = _walk(parser.command_line, words)
    if state.pending is not None:
        return _values(state, state.pending, current)
    if current.startswith("-") and not state.dashdash:
        if current.startswith("--") and "=" in current:
            option, value = _find_option(state.command_line, current)
            if option is None or not option.takes_value:
                return {}, NO_FILE_COMP
            return _values(state, option, value or "")
        return _flags(state, current), NO_FILE_COMP
    commands = state.command_line.commands
    if state.command is None and commands:
        return {name: " ".join(command.help.split()) for name, command in commands.items()
                if name.startswith(current)}, NO_FILE_COMP
    positional = _positional(state.command_line, len(state.positionals))
    if positional is None:
        return {}, NO_FILE_COMP
    return _values(state, positional, current)


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


