"""The pure core: plain API dicts in, decisions with reasons out.

No I/O, no clock, no threads: only the standard library and each other
(checked by tests/unit/test_layers.py).
"""
