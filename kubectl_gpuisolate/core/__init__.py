"""The pure core: plain API dicts in, decisions with reasons out.

No I/O, no clock, no threads: only the standard library, each other and the errors a parser
raises (checked by tests/unit/test_layers.py).

May import: errors.
"""
