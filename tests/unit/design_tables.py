"""The tables of docs/design.md, parsed for the tests that pin a rule tuple against its table.

``design_tables(heading)`` is every Markdown table of the section whose heading line starts with
``heading``, in order, each a list of rows as dicts keyed by the header's cells; ``design_rows`` is
one of them (the first by default).  ``code_names`` reads the `backquoted` names of a cell."""

import os
import re
from typing import Dict, List

DESIGN = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "design.md")

Row = Dict[str, str]


def _section(heading: str) -> List[str]:
    with open(DESIGN, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    section = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        section.append(line)
    return section


def design_tables(heading: str) -> List[List[Row]]:
    """The section's tables, in order; each table's separator line is checked to be one."""
    tables: List[List[List[str]]] = []
    previous = ""
    for line in _section(heading):
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append([cell.strip() for cell in line.strip().strip("|").split("|")])
        previous = line
    parsed = []
    for table in tables:
        header, rule_line, *rows = table
        assert set("".join(rule_line)) <= set("-: "), rule_line
        parsed.append([dict(zip(header, row)) for row in rows])
    return parsed


def design_rows(heading: str, index: int = 0) -> List[Row]:
    """The rows of the section's table number ``index`` (the first by default)."""
    return design_tables(heading)[index]


def code_names(cell: str) -> List[str]:
    """`a` / `b` -> ["a", "b"]"""
    return re.findall(r"`([^`]+)`", cell)
