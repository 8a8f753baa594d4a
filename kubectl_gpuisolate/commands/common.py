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


def add_node_flags(parser):
    parser.add_argument("nodes", nargs="*", metavar="NODE",
                        help="node names (default: every node found by "
                             f"{gpu.DEFAULT_SELECTION})").completer = complete_nodes
    parser.add_argument("-l", "--selector", metavar="SELECTOR",
                        help=f"node label selector (default: {gpu.DEFAULT_SELECTION})")


@dataclass(frozen=True)
class NodeTarget:
    """The nodes a command works on, by name or by label selector, and the cluster they are in."""

    connection: ConnectionOptions
    names: Tuple[str, ...]               # as given, without repeats; () means "by selector"
    requirements: Optional[list]         # the parsed -l; None when nodes are named or by default
    selector_text: Optional[str]         # -l as given; None when nodes are named or by default

    @classmethod
    def from_args(cls, args):
        """Validates the node and connection flags."""
        names = tuple(dict.fromkeys(args.nodes or ()))
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
