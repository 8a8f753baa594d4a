"""The command line as completion needs to know it, recorded while the parser is built.

``RecordingParser`` is the ``argparse.ArgumentParser`` the cli builds.  Its public building calls
(``add_argument``, ``add_argument_group``, ``add_subparsers(...).add_parser`` and ``parents=``) do
what argparse does and also note, in ``parser.command_line``, each option, positional and
subcommand.  kubectl's helper protocol (``kubectl_helper``) walks these notes, never argparse's
internals.

A completer is attached where its flag is defined, as argcomplete expects
(``parser.add_argument(...).completer = f``); a note keeps the action that ``add_argument``
returned, so it sees that completer too.
"""

import argparse
from typing import Dict, List, NamedTuple, Optional

from ..flags import NamedCompleter
from . import completers  # noqa: F401  (registers the shared flags' completers)

# add_argument(action=...) values whose option may be given more than once
REPEATING = ("append", "append_const", "count", "extend")
# positional nargs that take every word left
MANY = ("*", "+", argparse.REMAINDER)


class Argument:
    """One option or positional: what ``add_argument`` was given and returned.  Reads only
    the public attributes of argparse's Action."""

    def __init__(self, action, kwargs):
        self.action = action
        self.option_strings = tuple(action.option_strings)
        self.dest = action.dest
        self.takes_value = action.nargs != 0          # store_true, count, help, version: 0
        self.repeats = kwargs.get("action") in REPEATING
        self.many = action.nargs in MANY
        self.width = 1 if action.nargs in (None, "?") or self.many else int(action.nargs)
        self.help = action.help
        self.hidden = action.help == argparse.SUPPRESS
        self.choices = tuple(action.choices) if action.choices is not None else ()
        self.default = action.default

    @property
    def completer(self):
        """argcomplete's attribute, set on the action after ``add_argument`` returned; for a
        shared flag (flags.completed), the completer registered under its name."""
        completer = getattr(self.action, "completer", None)
        return completer.resolve() if isinstance(completer, NamedCompleter) else completer


class Command(NamedTuple):
    name: str
    help: str
    command_line: "CommandLine"


class CommandLine:
    """One parser's options, positionals and subcommands, in the order they were added (the
    order of its ``--help``)."""

    def __init__(self, parser):
        self.parser = parser
        self.options: List[Argument] = []
        self.positionals: List[Argument] = []
        self.commands: Dict[str, Command] = {}

    def record(self, action, kwargs):
        argument = Argument(action, kwargs)
        (self.options if argument.option_strings else self.positionals).append(argument)
        return action

    def inherit(self, parent):
        """``parents=[parent]``: argparse gives this parser the parent's arguments (the same
        action objects), so the notes are shared too."""
        self.options.extend(parent.options)
        self.positionals.extend(parent.positionals)

    def option(self, string) -> Optional[Argument]:
        """The option with this exact option string, or None."""
        for argument in self.options:
            if string in argument.option_strings:
                return argument
        return None

    def value_of(self, completer, namespace):
        """The value given for the first option that ``completer`` completes (as parsed into
        ``namespace``), else that option's default; None without such an option."""
        for argument in self.options:
            if argument.completer is completer:
                given = getattr(namespace, argument.dest, None)
                return argument.default if given is None else given
        return None


class RecordingGroup:
    """An argument group whose ``add_argument`` is also noted on its parser's command line."""

    def __init__(self, group, command_line):
        self.group = group
        self.command_line = command_line

    def add_argument(self, *args, **kwargs):
        return self.command_line.record(self.group.add_argument(*args, **kwargs), kwargs)


class Subcommands:
    """What ``add_subparsers`` returns: ``add_parser`` also notes the subcommand and its help."""

    def __init__(self, action, command_line):
        self.action = action
        self.command_line = command_line

    def add_parser(self, name, **kwargs):
        child = self.action.add_parser(name, **kwargs)
        command = Command(name, kwargs.get("help") or "", child.command_line)
        for alias in (name, *kwargs.get("aliases", ())):
            self.command_line.commands[alias] = command
        return child


class RecordingParser(argparse.ArgumentParser):
    """argparse, noting what it is given in ``command_line``.  Keyword arguments only.  Parents
    must be RecordingParsers; so must subparsers (argparse makes them of the parent's class
    unless ``add_subparsers(parser_class=...)`` says otherwise)."""

    def __init__(self, *, parents=(), **kwargs):
        self.command_line = CommandLine(self)   # before argparse adds -h through add_argument
        self.wrap_groups = False                # argparse's own groups stay as they are
        super().__init__(parents=list(parents), **kwargs)
        for parent in parents:
            self.command_line.inherit(parent.command_line)
        self.wrap_groups = True

    def add_argument(self, *args, **kwargs):
        return self.command_line.record(super().add_argument(*args, **kwargs), kwargs)

    def add_argument_group(self, *args, **kwargs):
        group = super().add_argument_group(*args, **kwargs)
        return RecordingGroup(group, self.command_line) if self.wrap_groups else group

    def add_mutually_exclusive_group(self, **kwargs):
        group = super().add_mutually_exclusive_group(**kwargs)
        return RecordingGroup(group, self.command_line) if self.wrap_groups else group

    def add_subparsers(self, **kwargs):
        self.wrap_groups = False                # with a title, argparse makes a group of its own
        try:
            action = super().add_subparsers(**kwargs)
        finally:
            self.wrap_groups = True
        return Subcommands(action, self.command_line)
