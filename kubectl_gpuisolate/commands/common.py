"""The node-selection flags that several subcommands share (names or -l)."""

from ..completion.completers import complete_nodes
from ..core import gpu, selectors
from ..errors import UsageError


def add_node_flags(parser):
    parser.add_argument("nodes", nargs="*", metavar="NODE",
                        help="node names (default: every node labelled "
                             f"{gpu.DEFAULT_NODE_SELECTOR})").completer = complete_nodes
    parser.add_argument("-l", "--selector", metavar="SELECTOR",
                        help=f"node label selector (default: {gpu.DEFAULT_NODE_SELECTOR})")


def node_selection(args):
    """Validates the node flags; returns (names, parsed selector, selector text)."""
    names = list(dict.fromkeys(args.nodes or ()))
    if names and args.selector:
        raise UsageError("cannot specify both node names and --selector")
    text = args.selector or (None if names else gpu.DEFAULT_NODE_SELECTOR)
    return names, (selectors.parse(text) if text else None), text
