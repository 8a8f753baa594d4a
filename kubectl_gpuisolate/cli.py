# PYTHON_ARGCOMPLETE_OK
"""The command line: the parser, the subcommand registry and the one exit point.

``main`` is the only place that catches errors and turns them into exit codes
(see errors.py and the README).  Building the parser imports no
``kubernetes``, so ``--help``, completion and usage errors stay fast.  ``_run`` is the
one place a command's options are built and its connection is made.
"""

import argparse
import os
import re
import sys

from . import __version__, interrupts
from .commands.common import IO
from .completion.registry import RecordingParser
from .errors import ApiError, GpuIsolateError
from .exits import EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM, EXIT_USAGE
from .flags import add_connection_flags

PROG = "kubectl gpuisolate"
COMMANDS = ("status", "taint", "untaint", "evacuate", "guard", "completion", "version")


class Parser(RecordingParser):
    """argparse with a one-line error instead of usage plus message; it records the command
    line for kubectl's completion protocol as it is built (completion/registry.py)."""

    def error(self, message):
        # A boolean flag given a value it cannot read: say it as kubectl (pflag) does.
        bad = re.fullmatch(r"argument (--[\w-]+): ignored explicit argument '(.*)'", message)
        if bad:
            message = (f'invalid argument "{bad.group(2)}" for "{bad.group(1)}" flag: '
                       "use true or false")
        sys.stderr.write(f"error: {message}; see '{self.prog} --help'\n")
        sys.exit(EXIT_USAGE)


def _command_module(name):
    from importlib import import_module
    return import_module(f"{__package__}.commands.{name}")


class _NotAlone(Exception):
    """The command line cannot be read without every command's parser."""


class _SharedOnly(argparse.ArgumentParser):
    def error(self, message):
        raise _NotAlone(message)


def named_command(shared, argv):
    """The command ``argv`` runs, read as the full parser would (the shared flags before it,
    abbreviated or with ``=``, and their values skipped); None when the line asks for help or
    the version before a command, names none, or does not parse: those need every command."""
    if argv is None:
        return None
    try:
        _, rest = _SharedOnly(add_help=False, parents=[shared]).parse_known_args(argv)
    except _NotAlone:
        return None
    return rest[0] if rest and rest[0] in COMMANDS else None


def build_parser(argv=None):
    """The parser; with ``argv``, only the parser of the command it names is built, so a run
    imports that command's module alone (the others cost ~8 ms of every start)."""
    shared = Parser(add_help=False)
    add_connection_flags(shared)
    parser = Parser(
        prog=PROG, parents=[shared],
        description="Keep ordinary pods off GPU nodes: show them, taint the nodes, "
                    "and evict only the pods that do not tolerate the GPU taint.",
        epilog="Run 'kubectl gpuisolate COMMAND --help' for a command's flags and examples.")
    parser.add_argument("--version", action="version", version=f"kubectl-gpuisolate {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                                       required=True)
    chosen = named_command(shared, argv)
    for name in (chosen,) if chosen else COMMANDS:
        _command_module(name).add_parser(subparsers, [shared])
    return parser


def main(argv=None):
    with interrupts.hard_stops():
        try:
            return _main(argv)
        except KeyboardInterrupt as exc:        # also while starting (imports, parsing)
            return interrupts.exit_code(exc)


def _main(argv):
    argv = sys.argv[1:] if argv is None else argv
    from .completion.kubectl_helper import is_kubectl_helper
    if is_kubectl_helper(sys.argv[0], argv):  # kubectl_complete-gpuisolate, for kubectl
        from .completion.kubectl_helper import serve_kubectl
        return serve_kubectl(build_parser(), argv)
    if "_ARGCOMPLETE" in os.environ:
        from .completion.shell import autocomplete
        autocomplete(build_parser())
    args = build_parser(argv).parse_args(argv)
    for line in getattr(args, "deprecations", ()):   # as kubectl: on stderr, and the flag still works
        sys.stderr.write(line + "\n")
    debug = getattr(args, "debug", False)
    try:
        return _run(args)
    except GpuIsolateError as exc:
        if debug:
            import traceback
            traceback.print_exc()
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: still one line, unless --debug
        if debug:
            raise
        sys.stderr.write(f"error: internal error ({type(exc).__name__}: {exc}); "
                         "rerun with --debug and report it\n")
        return EXIT_INTERNAL


def _run(args):
    """Each subcommand registers (``set_defaults``) its Options class and its
    ``run(options, kube, io)``; options are validated before anything connects."""
    options = args.options_class.from_args(args)
    kube = None
    if options.connection is not None:
        from .kube import connect
        kube = connect(options.connection, pool_size=options.pool_size)
    code = args.run(options, kube, IO(out=sys.stdout, err=sys.stderr))
    # As kubectl's --warnings-as-errors: the command ran, then the server's warnings fail it.
    count = getattr(kube, "warning_count", lambda: 0)()
    if count and options.connection.warnings_as_errors:
        raise ApiError(f"{count} warning{'s' if count > 1 else ''} received")
    return code


def entry_point():
    code = main()
    interrupted = code in (EXIT_SIGINT, EXIT_SIGTERM)
    # Interrupted: end now, without waiting for worker threads still blocked in a request.
    # Done, with no worker thread left: end without the interpreter's teardown too, which
    # frees every module one by one (~12 ms of a 200 ms status at seed size).
    flushed = _flushed()
    if interrupted or (flushed and not _workers_left()):
        os._exit(code)
    sys.exit(code)


def _flushed():
    """Whether stdout and stderr could be flushed (if not, the normal exit reports it)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _workers_left():
    """Whether a thread the interpreter would wait for at exit is still running, or something
    must run at exit: coverage.py (the suite's subprocess measurement) saves its data then."""
    import threading
    return "coverage" in sys.modules or any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                            if t is not threading.main_thread())
