"""One module per subcommand.  Each has ``add_parser``, which builds its flags and registers
its frozen Options class and its ``run(options, kube, io) -> exit code``.  ``cli`` builds the
options (``Options.from_args`` validates), connects when ``options.connection`` is set (with
``options.pool_size`` connections) and calls ``run``; a command writes only to ``io``.

May import: completion, core, errors, evacuation, exits, flags, interrupts, kube, output.
"""
