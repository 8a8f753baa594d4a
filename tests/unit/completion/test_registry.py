"""completion/registry.py: the command line recorded as the parser is built, checked against
what argparse itself does with the same parser (parsing and --help), and the rule that
completion/ reads no private argparse attribute."""

import argparse
import ast
import pathlib
import re

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.completion.registry import RecordingParser

COMPLETION = pathlib.Path(cli.__file__).parent / "completion"


def toy():
    shared = RecordingParser(add_help=False)
    group = shared.add_argument_group("connection")
    group.add_argument("--context", default=argparse.SUPPRESS, help="the context")
    group.add_argument("--as-group", dest="as_groups", action="append", help="repeatable")
    parser = RecordingParser(prog="toy", parents=[shared])
    parser.add_argument("--version", action="version", version="1")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", parents=[shared], help="run it", aliases=["r"])
    run.add_argument("nodes", nargs="*")
    run.add_argument("--mode", choices=["a", "b"], default="a", help="the mode")
    run.add_argument("-q", "--quiet", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("-v", action="count")
    either = run.add_mutually_exclusive_group()
    either.add_argument("--fast", action="store_true")
    pair = sub.add_parser("pair")
    pair.add_argument("first")
    pair.add_argument("rest", nargs=2)
    return parser


def test_options_in_the_order_of_help_with_what_the_protocol_needs():
    command_line = toy().command_line
    assert [o.option_strings for o in command_line.options] == [
        ("-h", "--help"), ("--context",), ("--as-group",), ("--version",)]
    context, as_group = command_line.options[1:3]
    assert (context.takes_value, context.repeats, context.help) == (True, False, "the context")
    assert (as_group.takes_value, as_group.repeats, as_group.dest) == (True, True, "as_groups")
    assert not command_line.option("--version").takes_value
    assert command_line.positionals == []


def test_subcommands_with_their_help_aliases_and_own_command_lines():
    commands = toy().command_line.commands
    assert list(commands) == ["run", "r", "pair"]
    assert commands["r"] is commands["run"] and commands["run"].help == "run it"
    assert commands["pair"].help == ""
    run = commands["run"].command_line
    assert [o.option_strings[0] for o in run.options] == ["-h", "--context", "--as-group", "--mode",
                                                          "-q", "-v", "--fast"]
    assert run.option("--mode").choices == ("a", "b") and run.option("--mode").default == "a"
    assert run.option("-q").hidden and not run.option("--mode").hidden
    assert run.option("-v").repeats and not run.option("-v").takes_value
    assert [(p.dest, p.many, p.width) for p in run.positionals] == [("nodes", True, 1)]
    pair = commands["pair"].command_line
    assert [(p.dest, p.many, p.width) for p in pair.positionals] == [("first", False, 1), ("rest", False, 2)]


def test_parents_share_their_records_as_argparse_shares_their_actions():
    parser = toy()
    top = parser.command_line.option("--context")
    assert parser.command_line.commands["run"].command_line.option("--context") is top
    args = parser.parse_args(["run", "--context", "c", "--as-group", "g", "--as-group", "h"])
    assert (args.context, args.as_groups) == ("c", ["g", "h"])   # the parser still parses


def test_value_of_the_option_a_completer_completes():
    def completer(**_):
        return {}
    parser = RecordingParser()
    parser.add_argument("--gpu-taint", dest="managed", default="k=v:NoSchedule").completer = completer
    assert parser.command_line.value_of(completer, argparse.Namespace()) == "k=v:NoSchedule"
    assert parser.command_line.value_of(completer, argparse.Namespace(managed="x:NoExecute")) == "x:NoExecute"
    assert parser.command_line.value_of(lambda **_: {}, argparse.Namespace()) is None


def test_a_titled_subparsers_group_still_builds():
    parser = RecordingParser(prog="t")
    sub = parser.add_subparsers(title="commands", dest="command")
    sub.add_parser("go", help="go")
    assert list(parser.command_line.commands) == ["go"]
    assert "commands:" in parser.format_help()
    assert parser.parse_args(["go"]).command == "go"


def parsers():
    parser = cli.build_parser()
    yield "", parser, parser.command_line
    for name, command in parser.command_line.commands.items():
        yield name, command.command_line.parser, command.command_line


def options_in_help(text):
    """The option strings of --help's option lines ("  -o {a,b}, --output {a,b}   help")."""
    found = set()
    for line in text.splitlines():
        if re.match(r"^  -", line):
            invocation = re.split(r"\s{2,}", line.strip())[0]
            found.update(part.split(" ")[0] for part in re.split(r", (?=-)", invocation))
    return found


@pytest.mark.parametrize("name, parser, command_line", list(parsers()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_option_of_help_is_recorded_and_nothing_else(name, parser, command_line):
    """The safety net: a flag added some way the registry does not see would be missing here."""
    recorded = {s for o in command_line.options if not o.hidden for s in o.option_strings}
    assert options_in_help(parser.format_help()) == recorded, name
    assert {"-h", "--help"} <= recorded


def test_the_help_scan_sees_every_kind_of_option_line():
    text = toy().command_line.commands["run"].command_line.parser.format_help()
    assert options_in_help(text) == {"-h", "--help", "--context", "--as-group", "--mode", "-v", "--fast"}
    assert options_in_help(cli.build_parser().format_help()) >= {"--kubeconfig", "-n", "--namespace",
                                                                 "--version", "--as-group"}


def test_the_help_scan_catches_a_flag_added_behind_the_registrys_back():
    parser = toy()
    argparse.ArgumentParser.add_argument(parser, "--sneaky")  # not RecordingParser.add_argument
    recorded = {s for o in parser.command_line.options for s in o.option_strings}
    assert options_in_help(parser.format_help()) - recorded == {"--sneaky"}


def test_the_cli_records_each_command_with_its_help():
    commands = cli.build_parser().command_line.commands
    assert list(commands) == list(cli.COMMANDS)
    assert commands["untaint"].help == "remove the GPU taint from the GPU nodes"
    assert [p.dest for p in commands["status"].command_line.positionals] == ["nodes"]
    assert [p.dest for p in commands["completion"].command_line.positionals] == ["shell"]


# -- no private argparse attributes in completion/ -----------------------------------------------------
def private_uses(source):
    """``x._name`` attribute reads and ``getattr(x, "_name")`` calls (dunders aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("_")):
            found.append(node.args[1].value)
    return found


def test_the_scan_finds_private_attributes():
    old = ("for a in parser._actions:\n    isinstance(a, argparse._SubParsersAction)\n"
           "getattr(parser, '_option_string_actions')\nparser._get_formatter()._expand_help(a)\n"
           "x.__class__\n")
    assert sorted(private_uses(old)) == ["_SubParsersAction", "_actions", "_expand_help",
                                         "_get_formatter", "_option_string_actions"]


@pytest.mark.parametrize("path", sorted(COMPLETION.glob("*.py")), ids=lambda p: p.name)
def test_completion_reads_no_private_attribute(path):
    assert private_uses(path.read_text(encoding="utf-8")) == [], path.name
