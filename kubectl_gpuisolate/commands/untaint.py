"""``untaint``: remove the GPU taint (``KEY`` or ``KEY:EFFECT``) from the GPU
nodes.  Other taints are never touched; an absent taint is not an error."""

import argparse
import sys
from dataclasses import dataclass

from ..completion.completers import complete_taint
from ..core.taints import TaintRef, parse_taint_ref, remove_taint
from ..errors import EXIT_OK
from ..flags import ConnectionOptions, DryRun, add_dry_run_flag, connection_options, parse_dry_run
from ..output.tables import warn
from .common import add_node_flags, node_selection

DEFAULT_REF = "nvidia.com/gpu:NoSchedule"

EXAMPLES = """examples:
  # Undo 'kubectl gpuisolate taint'
  kubectl gpuisolate untaint

  # Remove every effect of the key, showing what would change
  kubectl gpuisolate untaint --taint nvidia.com/gpu --dry-run=client
"""


@dataclass(frozen=True)
class UntaintOptions:
    connection: ConnectionOptions
    names: list
    requirements: list
    selector_text: str
    ref: TaintRef
    dry_run: DryRun

    @classmethod
    def from_args(cls, args):
        names, requirements, text = node_selection(args)
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text, ref=parse_taint_ref(args.taint),
                   dry_run=parse_dry_run(args.dry_run))


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "untaint", parents=parents, help="remove the GPU taint from the GPU nodes",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_REF, metavar="KEY[:EFFECT]",
                        help=f"the taint to remove (default {DEFAULT_REF}); without an effect, "
                             "every effect of the key").completer = complete_taint
    add_dry_run_flag(parser)
    parser.set_defaults(run=run)


def run(args, stdout=None):
    options = UntaintOptions.from_args(args)
    from ..kube import connect
    from ..kube.nodes import find_nodes

    stdout = stdout or sys.stdout
    kube = connect(options.connection)
    nodes = find_nodes(kube, options.names, options.requirements, options.selector_text, warn=warn)
    for node in nodes:
        name = node["metadata"]["name"]

        def compute(current):
            remaining, removed = remove_taint(current, options.ref)
            return (remaining, "untainted") if removed else (None, "not tainted")
        _, verb = kube.update_node_taints(name, compute, dry_run=options.dry_run)
        stdout.write(f"node/{name} {verb}{options.dry_run.suffix if verb == 'untainted' else ''}\n")
    return EXIT_OK
