"""A reader for the block-style YAML that kubectl and the cloud CLIs write kubeconfigs in, so
that a run need not import PyYAML (~10 ms of a ~0.2 s ``status``: its import compiles large
patterns).

``load(text)`` returns what PyYAML's safe loader returns for a document in the subset below, and
None for anything else; config.py then reads the file with PyYAML, so a kubeconfig outside the
subset is read as before, only slower.  The subset: block mappings and sequences (a sequence
may sit at its key's indentation, as kubectl writes it), plain scalars that PyYAML resolves to
strings, booleans or null, single- and double-quoted scalars on one line (double-quoted with
no escape but \\\\ and \\"), ``{}`` and ``[]``, comments and one leading ``---``; printable
ASCII only.  Outside it: anchors and aliases, tags, block and multi-line scalars, other flow
collections, plain scalars PyYAML would read as numbers or dates, tabs, CRLF and several
documents.  tests/unit/kube/test_yamlite.py holds it to PyYAML on generated documents.
"""

from typing import Any, List, Optional, Tuple

# YAML 1.1's words, as PyYAML's resolver reads them.
_WORDS = {"~": None, "null": None, "Null": None, "NULL": None,
          **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
          **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False)}
_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"
_NUMERIC_START = "-+.0123456789"

Line = Tuple[int, str]    # (indentation, the rest of the line)


class _Outside(Exception):
    """The document is outside the subset: PyYAML reads it."""


def load(text: str) -> Optional[dict]:
    """The mapping PyYAML's safe loader reads from ``text``; None when ``text`` is outside the
    subset or is not a mapping (PyYAML then reads it, or says what is wrong)."""
    if not text.isascii() or not text.replace("\n", "").isprintable():
        return None
    try:
        lines = _lines(text)
        if lines and lines[0] == (0, "---"):
            lines = lines[1:]
        if not lines or lines[0][0] != 0:
            return None
        node, end = _block(lines, 0, 0)
    except _Outside:
        return None
    return node if end == len(lines) and isinstance(node, dict) else None


def _lines(text: str) -> List[Line]:
    """The lines that hold something, without comment lines and trailing spaces; a document
    marker other than a first ``---`` is outside the subset."""
    found: List[Line] = []
    for raw in text.split("\n"):
        line = raw.rstrip(" ")
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        if len(line) == len(body) and body[:3] in ("---", "...") and (found or body != "---"):
            raise _Outside("a document marker")
        found.append((len(line) - len(body), body))
    return found


def _is_item(body: str) -> bool:
    return body == "-" or body.startswith("- ")


def _block(lines: List[Line], at: int, indent: int) -> Tuple[Any, int]:
    """(the block at lines[at], which starts at column ``indent``; the index after it)."""
    if _is_item(lines[at][1]):
        return _sequence(lines, at, indent)
    return _mapping(lines, at, indent)


def _nested(lines: List[Line], at: int, indent: int, sequence_here: bool) -> Tuple[Any, int]:
    """The value of a key or item with nothing after it on its line: the block on the next
    lines when it is deeper (or, for a key, a sequence at the key's own column), else null."""
    if at < len(lines) and lines[at][0] > indent:
        return _block(lines, at, lines[at][0])
    if sequence_here and at < len(lines) and lines[at][0] == indent and _is_item(lines[at][1]):
        return _sequence(lines, at, indent)
    return None, at


def _sequence(lines: List[Line], at: int, indent: int) -> Tuple[list, int]:
    items = []
    while at < len(lines) and lines[at][0] == indent and _is_item(lines[at][1]):
        rest = lines[at][1][1:].lstrip(" ")
        column = indent + len(lines[at][1]) - len(rest)
        if not rest:
            node, at = _nested(lines, at + 1, indent, sequence_here=False)
        elif _split(rest) is not None:
            lines[at] = (column, rest)       # "- key: value" opens a mapping at the key's column
            node, at = _mapping(lines, at, column)
        else:
            node, at = _scalar(rest), at + 1
        items.append(node)
    return items, at


def _mapping(lines: List[Line], at: int, indent: int) -> Tuple[dict, int]:
    mapping: dict = {}
    while at < len(lines) and lines[at][0] == indent and not _is_item(lines[at][1]):
        split = _split(lines[at][1])
        if split is None:
            raise _Outside("a line that is not a key")
        key_text, rest = split
        key = _plain(key_text)
        if rest:
            mapping[key], at = _scalar(rest), at + 1
        else:
            mapping[key], at = _nested(lines, at + 1, indent, sequence_here=True)
    return mapping, at


def _split(body: str) -> Optional[Tuple[str, str]]:
    """(key, what follows it) of a "key: value" or "key:" line; None when it is neither."""
    cut = body.find(": ")
    if cut < 0:
        if not body.endswith(":"):
            return None
        cut = len(body) - 1
    key = body[:cut]
    if not key or key[0] in "'\"" or "#" in key or key != key.rstrip(" "):
        raise _Outside("a key the subset does not read")
    return key, body[cut + 1:].strip(" ")


def _scalar(text: str) -> Any:
    if text[0] in "'\"":
        return _quoted(text)
    if text in ("{}", "[]"):
        return {} if text == "{}" else []
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut].rstrip(" ")
    if ": " in text or text.endswith(":"):
        raise _Outside("a colon in a plain scalar")
    return _plain(text)


def _plain(text: str) -> Any:
    """A plain scalar as PyYAML's resolver reads it, where that is a string, a boolean or null."""
    if text in _WORDS:
        return _WORDS[text]
    if text[0] in _INDICATORS and not (text[0] == "-" and len(text) > 1 and text[1] != " "):
        raise _Outside("a plain scalar that starts with an indicator")
    if text[0] in _NUMERIC_START and (any("0" <= c <= "9" for c in text)
                                      or "inf" in text.lower() or "nan" in text.lower()):
        raise _Outside("a plain scalar PyYAML may read as a number or a date")
    if text in ("<<", "="):
        raise _Outside("a merge key or value indicator")
    return text


def _quoted(text: str) -> str:
    """A single- or double-quoted scalar that ends on its line (then only a comment may follow)."""
    quote, out, at = text[0], [], 1
    while at < len(text):
        char = text[at]
        if char == quote and quote == "'" and text[at + 1:at + 2] == "'":
            out.append("'")
            at += 2
        elif char == quote:
            after = text[at + 1:]
            if after and not after.startswith(" #"):
                raise _Outside("something after a quoted scalar")
            return "".join(out)
        elif char == "\\" and quote == '"':
            if text[at + 1:at + 2] not in ('"', "\\"):
                raise _Outside("an escape other than \\\\ and \\\"")
            out.append(text[at + 1])
            at += 2
        else:
            out.append(char)
            at += 1
    raise _Outside("a quoted scalar that goes on to the next line")
