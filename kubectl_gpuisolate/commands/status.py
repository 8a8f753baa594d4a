"""``status``: the nodes as the seed's custom-columns view (every node, or those named or
selected, exactly as kubectl prints it), then one line per GPU node (GPU count, GPU taint,
counts by verdict) with the pods that need attention under it (those that would move, are
gated, have nowhere to land or carry a warning; every pod with -o wide or --all-pods), and
the PodDisruptionBudgets that would block a move."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..completion.completers import complete_taint
from ..core import guard, planner
from ..core.taints import DEFAULT_TAINT, Taint, parse_taint
from ..errors import ApiError, Forbidden
from ..exits import EXIT_FINDINGS, EXIT_OK
from ..flags import add_output_flag
from ..output import tables as output
from ..output.status import StatusResult, render_text, to_document
from . import owners
from .common import IO, NodeTarget, OnNodes, add_node_flags

if TYPE_CHECKING:
    from ..kube import KubeApi

EXAMPLES = """examples:
  # Every node, then the GPU nodes and the pods on them that do not belong there
  kubectl gpuisolate status

  # Every pod of the GPU nodes, with owners and PDBs
  kubectl gpuisolate status -o wide

  # Nodes of another pool, as JSON, exit 1 if anything is misplaced (for cron)
  kubectl gpuisolate status -l pool=gpu -o json --exit-code

  # The same, and exit 1 for pods that tolerate the GPU taint but use no GPU
  kubectl gpuisolate status --strict
"""


@dataclass(frozen=True)
class StatusOptions(OnNodes):
    target: NodeTarget
    managed_taint: Taint
    output: str
    exit_code: bool
    all_pods: bool = False
    strict: bool = False        # --exit-code counts isolation leaks too

    @classmethod
    def from_args(cls, args):
        return cls(target=NodeTarget.from_args(args), managed_taint=parse_taint(args.taint),
                   output=args.output, exit_code=args.exit_code or args.strict, all_pods=args.all_pods,
                   strict=args.strict)


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "status", parents=parents, help="show GPU nodes, their taints and misplaced pods",
        description=__doc__, epilog=EXAMPLES,
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT,
                        metavar="KEY[=VALUE]:EFFECT",
                        help="the GPU taint to judge pods against where a node has none yet "
                             f"(default {DEFAULT_TAINT}); nodes with this key and effect are judged "
                             "by the value they carry").completer = complete_taint
    add_output_flag(parser, ("wide", "json", "yaml"))
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 1 when pods are misplaced or GPU nodes are untainted")
    parser.add_argument("--strict", action="store_true",
                        help="--exit-code, and exit 1 for isolation leaks too: pods that tolerate "
                             "the GPU taint and use no GPU")
    parser.add_argument("--all-pods", action="store_true",
                        help="list every pod of each GPU node, not only those that need attention "
                             "(-o wide does too; json and yaml always hold every pod)")
    parser.set_defaults(options_class=StatusOptions, run=run)


def run(options: StatusOptions, kube: "KubeApi", io: IO) -> int:
    from ..kube.gather import build_plans
    from ..kube.nodes import find_nodes_and_view

    target = options.target
    documented = options.output in ("json", "yaml")
    with ThreadPoolExecutor(max_workers=3) as early:
        pdbs = early.submit(kube.list_pdbs)     # needs no node: read while the nodes are
        guarding = early.submit(read_guard, kube)
        # The document records which server judged it (core.server_versions); text does not.
        server = early.submit(kube.server_version) if documented else None
        nodes, version, view, listed = find_nodes_and_view(
            kube, target.names, target.requirements, target.selector_text, warn=io.warn)
        # The pods are read as of the node list or later (one consistent read, not hundreds).
        plans = build_plans(kube, nodes, planner.PlanOptions(options.managed_taint),
                            not_older_than=version, pdbs=pdbs, landing_check=True, warn=io.warn,
                            cluster_nodes=listed)
        result = StatusResult(nodes, plans, options.managed_taint, view,
                              server.result() if server else "", guarding.result())
    for warning in result.warnings:
        io.warn(warning)
    owners.warn_pools(nodes, "persist the GPU taint in", io.warn)
    if documented:
        io.out.write(output.document(to_document(result), options.output))
    else:
        io.out.write(render_text(result, wide=options.output == "wide",
                                 all_pods=options.all_pods or options.output == "wide"))
    return EXIT_FINDINGS if options.exit_code and findings(plans, options.strict) else EXIT_OK


def read_guard(kube: "KubeApi") -> guard.GuardState:
    """The guard's binding, one GET; a role without the guard's optional rule cannot say."""
    try:
        return guard.state_of(kube.get_admission_object(guard.BINDING, guard.NAME))
    except Forbidden:
        return guard.GuardState(guard.UNKNOWN, why="no permission")
    except ApiError as exc:
        return guard.GuardState(guard.UNKNOWN, why=f"HTTP {exc.status}")


def findings(plans, strict=False):
    """What --exit-code reports: misplaced pods, or a GPU node without the GPU taint; with
    --strict, isolation leaks too (without it, scripts keep the meaning they had)."""
    return any(p.misplaced or not p.tainted or (strict and p.leaks) for p in plans)
