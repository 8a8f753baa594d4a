"""``guard``: keep the GPU nodes isolated after an evacuation with a ValidatingAdmissionPolicy
and its binding (Kubernetes 1.30 or newer), which warn about, audit or reject new pods that use
no GPU yet tolerate the GPU taint or name a GPU node.  DaemonSet and mirror pods, and the exempt
namespaces, pass.  Written by server-side apply, so a second run changes nothing; ``--remove``
deletes exactly the objects it wrote (by their labels)."""

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple

from ..completion.completers import complete_taint
from ..core import gpu, guard, hidden_gpu
from ..core.dryrun import DryRun
from ..core.taints import DEFAULT_TAINT, Taint, parse_taint
from ..errors import ApiError, AuthError
from ..exits import EXIT_OK
from ..flags import ConnectionOptions, add_dry_run_flag, add_output_flag, connection_options, parse_dry_run
from ..output import guard as output
from .common import IO

if TYPE_CHECKING:
    from ..kube import KubeApi

EXAMPLES = """examples:
  # Warn (the default mode) about new pods that would leak onto the GPU nodes
  kubectl gpuisolate guard

  # Show the policy and its binding without writing them
  kubectl gpuisolate guard --mode Deny --dry-run=client -o yaml

  # Reject them, except in the monitoring namespace
  kubectl gpuisolate guard --mode Deny --exempt-namespace monitoring

  # Delete what guard wrote
  kubectl gpuisolate guard --remove
"""


@dataclass(frozen=True)
class GuardOptions:
    connection: ConnectionOptions
    taint: Taint
    mode: str
    exempt: Tuple[str, ...]
    remove: bool
    dry_run: DryRun
    output: str
    pool_size = 4

    @classmethod
    def from_args(cls, args):
        return cls(connection=connection_options(args), taint=parse_taint(args.taint),
                   mode=guard.parse_mode(args.mode), exempt=tuple(args.exempt_namespace or ()),
                   remove=args.remove, dry_run=parse_dry_run(args.dry_run), output=args.output)


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "guard", parents=parents, help="keep the GPU nodes isolated with an admission policy",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default=guard.DEFAULT_MODE, metavar="|".join(guard.MODES),
                        help="what the API server does with a pod the guard judges: Warn (default: "
                             "the client sees a warning), Audit (the audit log records it) or Deny")
    parser.add_argument("--exempt-namespace", action="append", metavar="NAMESPACE",
                        help="a namespace whose pods pass (repeatable; kube-system and the GPU "
                             "Operator's namespace always do)")
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT,
                        metavar="KEY[=VALUE]:EFFECT",
                        help=f"the GPU taint (default {DEFAULT_TAINT})").completer = complete_taint
    parser.add_argument("--remove", action="store_true",
                        help="delete the policy and binding guard wrote, nothing else")
    add_dry_run_flag(parser)
    add_output_flag(parser, ("json", "yaml"))
    parser.set_defaults(options_class=GuardOptions, run=run)


def run(options: GuardOptions, kube: "KubeApi", io: IO) -> int:
    guard.check_server(kube.server_version())
    if options.remove:
        return remove(options, kube, io)
    spec = build_spec(options, kube, io)
    objects = guard.objects(spec)
    if options.dry_run is not DryRun.CLIENT:
        check_permission(kube, ("get", "create", "patch"))
    lines = io.err if options.output else io.out      # -o: stdout holds the document alone
    written = [write(kube, obj, options.dry_run, lines) for obj in objects]
    if options.output:
        io.out.write(output.render_objects(written, options.output))
    io.err.write(output.render_summary(spec, options.dry_run))
    return EXIT_OK


def build_spec(options: GuardOptions, kube: "KubeApi", io: IO) -> guard.GuardSpec:
    nodes = tuple(n["metadata"]["name"] for n in gpu.gpu_nodes(kube.list_nodes()))
    if not nodes:
        io.warn("no GPU nodes found: the guard names none, and judges pods by the GPU taint alone")
    try:
        runtimes = tuple(sorted(name for name, handler in kube.list_runtime_classes().items()
                                if hidden_gpu.NVIDIA_RUNTIME in handler))
    except ApiError as exc:
        io.warn(f"RuntimeClasses could not be read ({exc}): a RuntimeClass counts as a GPU runtime "
                "by its name alone")
        runtimes = ()
    return guard.GuardSpec(taint=options.taint, gpu_nodes=nodes, gpu_runtime_classes=runtimes,
                           exempt_namespaces=exempt_namespaces(options.exempt, kube, io),
                           mode=options.mode)


def exempt_namespaces(given: Tuple[str, ...], kube: "KubeApi", io: IO) -> Tuple[str, ...]:
    """kube-system, the GPU Operator's namespace when there is one, and ``given`` (a namespace
    that does not exist yet is exempted all the same, with a warning)."""
    try:
        existing = set(kube.list_namespace_names())
    except ApiError as exc:
        io.warn(f"namespaces could not be listed ({exc}): the GPU Operator's usual namespaces "
                f"({', '.join(guard.GPU_OPERATOR_NAMESPACES)}) are exempted")
        return tuple(sorted({*guard.ALWAYS_EXEMPT, *guard.GPU_OPERATOR_NAMESPACES, *given}))
    for name in given:
        if name not in existing:
            io.warn(f"namespace {name} does not exist: exempted all the same")
    operator = {n for n in guard.GPU_OPERATOR_NAMESPACES if n in existing}
    return tuple(sorted({*guard.ALWAYS_EXEMPT, *operator, *given}))


def check_permission(kube: "KubeApi", verbs: Tuple[str, ...]) -> None:
    """One line naming the first verb the role lacks, before anything is written (asked for the
    guard's objects by name: a role may grant just those)."""
    for plural in guard.PLURALS.values():
        for verb in verbs:
            name = "" if verb == "list" else guard.NAME
            if kube.can_i(verb, plural, group=guard.GROUP, name=name) is False:
                raise AuthError(f"cannot {verb} {plural}.{guard.GROUP}: the guard needs it "
                                "(rbac/clusterrole.yaml, the optional guard rule)")


def write(kube: "KubeApi", obj: dict, dry_run: DryRun, lines) -> dict:
    """Applies one object and reports what that did (created, configured or unchanged; a client
    dry run cannot tell the last two apart, so it says configured)."""
    kind, name = obj["kind"], obj["metadata"]["name"]
    before = kube.get_admission_object(kind, name)
    after = kube.apply_admission_object(obj, dry_run=dry_run)
    if before is None:
        verb = output.CREATED
    elif dry_run is not DryRun.CLIENT and _same(before, after):
        verb = output.UNCHANGED
    else:
        verb = output.CONFIGURED
    lines.write(output.render_change(kind, name, verb, dry_run))
    return after


def _same(before: dict, after: dict) -> bool:
    return (before.get("spec") == after.get("spec")
            and (before.get("metadata") or {}).get("labels") == (after.get("metadata") or {}).get("labels"))


def remove(options: GuardOptions, kube: "KubeApi", io: IO) -> int:
    if options.dry_run is not DryRun.CLIENT:
        check_permission(kube, ("list", "delete"))
    # The binding first: from then on the policy judges no pod, and goes with nothing half-bound.
    found = [(kind, o) for kind in (guard.BINDING, guard.POLICY)
             for o in kube.list_admission_objects(kind, guard.LABEL_SELECTOR)]
    if not found:
        io.err.write(output.render_none_found())
    for kind, obj in found:
        meta = obj["metadata"]
        kube.delete_admission_object(kind, meta["name"], meta.get("uid", ""), dry_run=options.dry_run)
        io.out.write(output.render_change(kind, meta["name"], output.DELETED, options.dry_run))
    return EXIT_OK
