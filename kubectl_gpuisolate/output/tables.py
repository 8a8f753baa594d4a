"""Rendering: kubectl-style tables, the custom-columns node view, json and yaml.

The building blocks of the output package: its command modules hand it plain rows or
documents; progress and warnings go to stderr through ``Progress`` and ``warn``.
"""

import json
import sys
import time
from typing import Dict

NONE = "<none>"


def go_format(value):
    """Formats a decoded JSON value the way Go's fmt %v prints it, as kubectl's
    custom-columns does: maps with sorted keys, lists in brackets."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def tabwriter(rows, *, minwidth=6, padding=3):
    """Aligns rows as kubectl's tabwriter does (minwidth 6, padding 3).

    Every cell but the last of a line is padded to its column's width; the
    last cell is printed as it is.
    """
    widths: Dict[int, int] = {}
    for row in rows:
        for index, cell in enumerate(row[:-1]):
            widths[index] = max(widths.get(index, minwidth), len(cell) + padding)
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("".join(cells) + (row[-1] if row else ""))
    return "\n".join(lines) + "\n" if lines else ""


def node_view(nodes):
    """The seed's view, byte for byte:
    kubectl get nodes -o 'custom-columns=NAME:.metadata.name,GPU_PRESENT:.metadata.labels.nvidia\\.com/gpu\\.present,TAINTS:.spec.taints'
    """  # noqa: E501 (the seed's command line, quoted whole)
    rows = [["NAME", "GPU_PRESENT", "TAINTS"]]
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        taints = (node.get("spec") or {}).get("taints")
        present = labels.get("nvidia.com/gpu.present")
        rows.append([node["metadata"]["name"],
                     NONE if present is None else go_format(present),
                     NONE if not taints else go_format(taints)])
    return tabwriter(rows)


def table(headers, rows):
    """A kubectl-style table (upper-case headers, no borders): tabulate's "plain" format.

    Printable ASCII cells (pod names, reasons) are aligned here, byte for byte as
    tabulate aligns them (cells stripped, a column as wide as its widest cell or its
    header plus 2, two spaces between columns, no trailing spaces); importing and
    running tabulate costs more than the rest of a small ``status``.  Anything else
    (wide or invisible characters, line breaks) still goes through tabulate.
    """
    if not rows:
        return ""
    headers = [h.upper() for h in headers]
    cells = [[str(c) for c in r] for r in rows]
    if any(len(r) != len(headers) or not all(c.isascii() and c.isprintable() for c in r)
           for r in cells) or not all(h.isascii() and h.isprintable() for h in headers):
        return _tabulate(headers, cells)
    cells = [[c.strip() for c in r] for r in cells]
    widths = [len(h) + 2 for h in headers]
    for row in cells:
        for index, cell in enumerate(row):
            if len(cell) > widths[index]:
                widths[index] = len(cell)
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
             for row in [headers] + cells]
    if not lines[-1]:
        lines.pop()        # as splitlines() drops it below
    return "\n".join(lines) + "\n"


def _tabulate(headers, cells):
    from tabulate import tabulate

    text = tabulate(cells, headers=headers, tablefmt="plain", disable_numparse=True, stralign="left")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def document(doc, fmt):
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    import yaml
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


class Progress:
    """One line per event on stderr, prefixed by the elapsed time."""

    def __init__(self, stream=None, *, quiet=False):
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.quiet = quiet

    def __call__(self, message):
        if not self.quiet:
            elapsed = time.monotonic() - self.start
            self.stream.write(f"[{elapsed:6.1f}s] {message}\n")
            self.stream.flush()


def warn(message, stream=None):
    (stream or sys.stderr).write(f"Warning: {message}\n")
