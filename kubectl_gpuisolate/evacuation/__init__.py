"""evacuate's engine: the pure preflight and targets (``plan``), what each Eviction answer
means (``policy``), the shared state of a run (``state``), seeing evicted pods go (``watch``),
the eviction engine (``engine``) and the run across nodes (``run``).
It uses the core and the Kube API calls; it formats nothing itself (``output.evacuate``).

May import: core, errors, kube, output.
"""
