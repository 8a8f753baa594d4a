"""Running a subcommand as cli.py does, but against a fake cluster and into buffers."""

import io
import re

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands.common import IO


def buffers():
    return IO(out=io.StringIO(), err=io.StringIO())


def run_command(cluster, *argv, streams=None):
    """(exit code, stdout, stderr) of ``kubectl gpuisolate ARGV`` on ``cluster``.  Pass
    ``streams`` (``buffers()``) to read what was written before an error."""
    args = cli.build_parser().parse_args(list(argv))
    streams = streams or buffers()
    code = args.run(args.options_class.from_args(args), cluster, streams)
    return code, streams.out.getvalue(), streams.err.getvalue()


def table_rows(text, headers=("NAMESPACE", "POD")):
    """The cells of every row of the kubectl-style tables in ``text`` whose headers begin with
    ``headers`` (cells are two or more spaces apart, and hold single spaces only)."""
    found, inside = [], False
    for line in text.splitlines():
        cells = re.split(r" {2,}", line.strip())
        if tuple(cells[:len(headers)]) == tuple(headers):
            inside = True
        elif inside and line.strip():
            found.append(cells)
        else:
            inside = False
    return found
