"""``version``: the plugin's version (no cluster needed)."""

from dataclasses import dataclass

from .. import __version__
from .common import IO


@dataclass(frozen=True)
class VersionOptions:
    connection = None        # needs no cluster

    @classmethod
    def from_args(cls, args):
        return cls()


def add_parser(subparsers, parents):
    parser = subparsers.add_parser("version", help="print the plugin's version",
                                   description=__doc__)
    parser.set_defaults(options_class=VersionOptions, run=run)


def run(options: VersionOptions, kube: None, io: IO) -> int:
    io.out.write(f"kubectl-gpuisolate {__version__}\n")
    return 0
