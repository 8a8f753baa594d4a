"""``status``: the GPU nodes as the seed's custom-columns view, then per node
its GPU count, whether the GPU taint is present, each pod's verdict and reason,
and the PodDisruptionBudgets that would block a move."""

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..completion.completers import complete_taint
from ..core import planner
from ..core.taints import DEFAULT_TAINT, Taint, parse_taint
from ..errors import EXIT_FINDINGS, EXIT_OK
from ..flags import ConnectionOptions, add_output_flag, connection_options
from ..output import tables as output
from ..output.status import render_text, to_document
from .common import add_node_flags, node_selection

EXAMPLES = """examples:
  # The GPU nodes and the pods on them that do not belong there
  kubectl gpuisolate status

  # Nodes of another pool, as JSON, exit 1 if anything is misplaced (for cron)
  kubectl gpuisolate status -l pool=gpu -o json --exit-code
"""


@dataclass(frozen=True)
class StatusOptions:
    connection: ConnectionOptions
    names: list
    requirements: list
    selector_text: str
    managed_taint: Taint
    output: str
    exit_code: bool

    @classmethod
    def from_args(cls, args):
        names, requirements, text = node_selection(args)
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text, managed_taint=parse_taint(args.taint),
                   output=args.output, exit_code=args.exit_code)


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "status", parents=parents, help="show GPU nodes, their taints and misplaced pods",
        description=__doc__, epilog=EXAMPLES,
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT, metavar="KEY[=VALUE]:EFFECT",
                        help="the GPU taint to judge pods against where a node has none yet "
                             f"(default {DEFAULT_TAINT}); nodes with this key and effect are judged "
                             "by the value they carry").completer = complete_taint
    add_output_flag(parser, ("wide", "json", "yaml"))
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 1 when pods are misplaced or GPU nodes are untainted")
    parser.set_defaults(run=run)


def run(args, stdout=None):
    options = StatusOptions.from_args(args)
    from ..kube import connect
    from ..kube.gather import build_plans
    from ..kube.nodes import FETCH_WORKERS, find_nodes_with_version

    stdout = stdout or sys.stdout
    kube = connect(options.connection, pool_size=FETCH_WORKERS + 2)
    with ThreadPoolExecutor(max_workers=1) as early:
        pdbs = early.submit(kube.list_pdbs)     # needs no node: read while the nodes are
        nodes, version = find_nodes_with_version(kube, options.names, options.requirements,
                                                 options.selector_text, warn=output.warn)
        # The pods are read as of the node list or later (one consistent read, not hundreds).
        plans = build_plans(kube, nodes, planner.PlanOptions(options.managed_taint),
                            not_older_than=version, pdbs=pdbs)
    warnings = [w for plan in plans for w in plan.warnings]
    for warning in warnings:
        output.warn(warning)
    if options.output in ("json", "yaml"):
        stdout.write(output.document(to_document(options, nodes, plans), options.output))
    else:
        stdout.write(render_text(nodes, plans, wide=options.output == "wide"))
    findings = any(p.misplaced or not p.tainted for p in plans)
    return EXIT_FINDINGS if options.exit_code and findings else EXIT_OK
