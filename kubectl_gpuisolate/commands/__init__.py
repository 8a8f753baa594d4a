"""One module per subcommand: ``add_parser`` builds its flags, and ``run``
follows options -> validate -> run."""
