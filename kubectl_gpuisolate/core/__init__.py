"""The pure core: plain API dicts in, decisions with reasons out.

No I/O, no clock, no threads: only the standard library and each other
(checked by tests/unit/test_layers.py).

May import: errors (the usage errors a parser raises); else only the standard library.
"""
