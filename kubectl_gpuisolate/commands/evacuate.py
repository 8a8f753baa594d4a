"""``evacuate``: placeholder until its issue lands."""

import sys


def add_parser(subparsers, parents):
    parser = subparsers.add_parser("evacuate", parents=parents, help="(not yet implemented)")
    parser.set_defaults(run=run)


def run(args, stdout=None):
    sys.stderr.write("error: evacuate is not implemented yet\n")
    return 12
