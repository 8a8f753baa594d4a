"""What the subcommands share: the node-selection flags (names or -l) and the ``NodeTarget``
they become, and ``IO``, the two streams a command writes to."""

from dataclasses import dataclass
from typing import Optional, TextIO, Tuple

from ..completion.completers import complete_nodes
from ..core import gpu, selectors
from ..errors import UsageError
from ..flags import ConnectionOptions, connection_options
from ..output import tables as output


@dataclass(frozen=True)
class IO:
    """Where a command writes: data to ``out``, warnings and progress to ``err``.  cli.py
    passes sys.stdout and sys.stderr; tests pass buffers."""

    out: TextIO
    err: TextIO

    def warn(self, message):
        output.warn(message, self.err)


def add_node_flags(parser, *, taint_form=""):
    """NODE arguments (names, or node/NAME) and -l; with ``taint_form``, one argument may be
    the taint instead, in kubectl taint's syntax."""
    taint = f" (one of them may be the taint, {taint_form}, as in kubectl taint)" if taint_form else ""
    parser.add_argument("nodes", nargs="*", metavar="NODE",
                        help="node names or node/NAME (default: every node found by "
                             f"{gpu.DEFAULT_SELECTION}){taint}").completer = complete_nodes
    parser.add_argument("-l", "--selector", metavar="SELECTOR",
                        help=f"node label selector (default: {gpu.DEFAULT_SELECTION})")


NODE_PREFIXES = ("node/", "nodes/")   # kubectl's TYPE/NAME form


def node_name(arg: str) -> str:
    for prefix in NODE_PREFIXES:
        if arg.startswith(prefix):
            return arg[len(prefix):]
    return arg


def is_taint_shaped(arg: str) -> bool:
    """A node name never holds '=' or ':' nor ends in '-': such an argument is a taint."""
    return "=" in arg or ":" in arg or arg.endswith("-")


def split_positionals(args, *, taint_form: str = ""):
    """(node names, the one positional taint or None) from the NODE arguments, as kubectl's
    ``taint node NAME... KEY=VALUE:EFFECT`` reads them.  ``taint_form`` is what this command
    accepts there (e.g. "KEY[=VALUE]:EFFECT"); "" means no taint may be given positionally."""
    taints = [a for a in args.nodes or () if is_taint_shaped(a)]
    names = [node_name(a) for a in args.nodes or () if not is_taint_shaped(a)]
    if taints and not taint_form:
        raise UsageError(f"{taints[0]!r} is not a node name (it looks like a taint; this command "
                         "takes the taint with --gpu-taint)")
    if len(taints) > 1:
        raise UsageError(f"one taint at a time: got {', '.join(taints)}")
    return names, (taints[0] if taints else None)


def pick_taint(positional, flag_value, default, form):
    """The taint given positionally or with --gpu-taint (not both, unless they agree)."""
    if positional is None:
        return flag_value
    if flag_value not in (default, positional):
        raise UsageError(f"give the taint once: {positional!r} or --gpu-taint {flag_value!r} ({form})")
    return positional


@dataclass(frozen=True)
class NodeTarget:
    """The nodes a command works on, by name or by label selector, and the cluster they are in."""

    connection: ConnectionOptions
    names: Tuple[str, ...]               # as given, without repeats; () means "by selector"
    requirements: Optional[list]         # the parsed -l; None when nodes are named or by default
    selector_text: Optional[str]         # -l as given; None when nodes are named or by default

    @classmethod
    def from_args(cls, args, names=None):
        """Validates the node and connection flags; ``names`` replaces the NODE arguments when
        the command has taken a positional taint from them (``split_positionals``)."""
        if names is None:
            names, _ = split_positionals(args)
        names = tuple(dict.fromkeys(names))
        if names and args.selector:
            raise UsageError("cannot specify both node names and --selector")
        text = args.selector or None
        requirements = selectors.parse(text) if text else None
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text)


class OnNodes:
    """For the Options of the commands that work on GPU nodes (a ``target`` field): cli.py
    connects to ``connection`` with a pool of ``pool_size`` connections."""

    target: NodeTarget    # declared here for the type checker; each Options dataclass has the field

    @property
    def pool_size(self):
        from ..kube.nodes import FETCH_WORKERS

        return FETCH_WORKERS + 2     # the node and pod reads, the PDB list read beside them, a spare

    @property
    def connection(self):
        return self.target.connection
