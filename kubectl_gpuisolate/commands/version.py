"""``version``: the plugin's version (no cluster needed)."""

import sys

from .. import __version__


def add_parser(subparsers, parents):
    parser = subparsers.add_parser("version", help="print the plugin's version",
                                   description=__doc__)
    parser.set_defaults(run=run)


def run(args, stdout=None):
    (stdout or sys.stdout).write(f"kubectl-gpuisolate {__version__}\n")
    return 0
