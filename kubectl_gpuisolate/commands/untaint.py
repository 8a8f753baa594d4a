"""``untaint``: remove the GPU taint (``KEY`` or ``KEY:EFFECT``) from the GPU
nodes.  Other taints are never touched; an absent taint is not an error."""

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..completion.completers import complete_taint
from ..core.dryrun import DryRun
from ..core.taints import TaintRef, parse_taint_ref, remove_taint_write
from ..errors import UsageError
from ..exits import EXIT_OK
from ..flags import add_dry_run_flag, parse_dry_run
from ..output.taint import TaintChange, render_change
from . import owners
from .common import IO, NodeTarget, OnNodes, add_node_flags, pick_taint, split_positionals

if TYPE_CHECKING:
    from ..kube import KubeApi

DEFAULT_REF = "nvidia.com/gpu:NoSchedule"
REF_FORM = "KEY[:EFFECT]-"

EXAMPLES = """examples:
  # Undo 'kubectl gpuisolate taint'
  kubectl gpuisolate untaint

  # Remove every effect of the key, showing what would change
  kubectl gpuisolate untaint --taint nvidia.com/gpu --dry-run=client

  # kubectl's syntax: names (or node/NAME) and the taint with a trailing '-'
  kubectl gpuisolate untaint node/gpu-1 nvidia.com/gpu:NoSchedule-
"""


@dataclass(frozen=True)
class UntaintOptions(OnNodes):
    target: NodeTarget
    ref: TaintRef
    dry_run: DryRun

    @classmethod
    def from_args(cls, args):
        names, positional = split_positionals(args, taint_form=REF_FORM)
        if positional is not None:
            if not positional.endswith("-"):
                raise UsageError(f"{positional!r}: to remove a taint, end it with '-' ({REF_FORM}), "
                                 "as in kubectl taint")
            positional = positional[:-1]
        ref = pick_taint(positional, args.taint, DEFAULT_REF, REF_FORM)
        return cls(target=NodeTarget.from_args(args, names), ref=parse_taint_ref(ref),
                   dry_run=parse_dry_run(args.dry_run))


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "untaint", parents=parents, help="remove the GPU taint from the GPU nodes",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser, taint_form=REF_FORM)
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_REF, metavar="KEY[:EFFECT]",
                        help=f"the taint to remove (default {DEFAULT_REF}); without an effect, "
                             "every effect of the key").completer = complete_taint
    add_dry_run_flag(parser)
    parser.set_defaults(options_class=UntaintOptions, run=run)


def run(options: UntaintOptions, kube: "KubeApi", io: IO) -> int:
    from ..kube.nodes import find_nodes

    target = options.target
    nodes = find_nodes(kube, target.names, target.requirements, target.selector_text,
                       warn=io.warn)
    owners.refuse_owned_removal(nodes, options.ref)
    for node in nodes:
        name = node["metadata"]["name"]
        _, verb = kube.update_node_taints(
            name, lambda current: remove_taint_write(current, options.ref), dry_run=options.dry_run)
        io.out.write(render_change(TaintChange(name, verb, options.dry_run)))
    owners.warn_pools(nodes, "remove it from", io.warn)   # after the writes: an error stays one line
    return EXIT_OK
