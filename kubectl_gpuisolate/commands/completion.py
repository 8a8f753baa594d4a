"""``completion``: print the shell completion script for ``kubectl-gpuisolate``.

The script (argcomplete's) completes the command when typed directly as
``kubectl-gpuisolate``.  ``kubectl gpuisolate <TAB>`` goes through kubectl
instead (kubectl >= 1.26 with its own completion enabled), which asks the
helper ``kubectl_complete-gpuisolate``: a link to this program, next to it.
krew cannot create that link, so make it once yourself (see below)."""

import argparse
from dataclasses import dataclass

from .common import IO

SHELLS = ("bash", "zsh")

EXAMPLES = """examples:
  # Direct completion of kubectl-gpuisolate, in ~/.bashrc (or ~/.zshrc with zsh)
  source <(kubectl gpuisolate completion bash)

  # kubectl gpuisolate <TAB> (kubectl completion must be enabled): link the helper once
  ln -s kubectl-gpuisolate "${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-gpuisolate"
"""


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "completion", help="print the shell completion script (bash or zsh)",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")
    parser.set_defaults(options_class=CompletionOptions, run=run)


@dataclass(frozen=True)
class CompletionOptions:
    shell: str
    connection = None        # needs no cluster

    @classmethod
    def from_args(cls, args):
        return cls(shell=args.shell)


def run(options: CompletionOptions, kube: None, io: IO) -> int:
    from ..completion.shell import shellcode

    io.out.write(shellcode(options.shell))
    return 0
