# PYTHON_ARGCOMPLETE_OK
"""The command line: the parser, the subcommand registry and the one exit point.

``main`` is the only place that catches errors and turns them into exit codes
(see errors.py and the README).  Building the parser imports no
``kubernetes``, so ``--help``, completion and usage errors stay fast.
"""

import argparse
import os
import signal
import sys
import threading

from . import __version__
from .errors import EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM, EXIT_USAGE, GpuIsolateError
from .flags import add_connection_flags

PROG = "kubectl gpuisolate"
COMMANDS = ("status", "taint", "untaint", "evacuate", "completion", "version")


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error instead of usage plus message."""

    def error(self, message):
        sys.stderr.write(f"error: {message}; see '{self.prog} --help'\n")
        sys.exit(EXIT_USAGE)


def _command_module(name):
    from importlib import import_module
    return import_module(f"{__package__}.commands.{name}")


def build_parser():
    shared = Parser(add_help=False)
    add_connection_flags(shared)
    parser = Parser(
        prog=PROG, parents=[shared],
        description="Keep ordinary pods off GPU nodes: show them, taint the nodes, "
                    "and evict only the pods that do not tolerate the GPU taint.",
        epilog="Run 'kubectl gpuisolate COMMAND --help' for a command's flags and examples.")
    parser.add_argument("--version", action="version", version=f"kubectl-gpuisolate {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers.required = True
    for name in COMMANDS:
        _command_module(name).add_parser(subparsers, [shared])
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (outside evacuate, which handles its own): unwinds like Ctrl-C, exits 143."""


def _terminate(signum, frame):
    raise Terminated()


def main(argv=None):
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:        # also while starting (imports, parsing)
        name, code = ("SIGTERM", EXIT_SIGTERM) if isinstance(exc, Terminated) else ("SIGINT", EXIT_SIGINT)
        sys.stderr.write(f"error: interrupted by {name}\n")
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv):
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    from .complete import is_kubectl_helper
    if is_kubectl_helper(sys.argv[0], argv):  # kubectl_complete-gpuisolate, for kubectl
        from .complete import serve_kubectl
        return serve_kubectl(parser, argv)
    if "_ARGCOMPLETE" in os.environ:
        from .complete import autocomplete
        autocomplete(parser)
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return args.run(args)
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


def entry_point():
    sys.exit(main())
