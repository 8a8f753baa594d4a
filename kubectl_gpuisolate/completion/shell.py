"""Direct completion of ``kubectl-gpuisolate`` through argcomplete, and its shell script."""


def autocomplete(parser):
    """Called by cli.main when ``_ARGCOMPLETE`` is set (the shell script that
    ``completion bash|zsh`` prints); exits when it has answered.  The completers are on
    the parser's actions already, attached where each flag is defined."""
    import argcomplete

    from . import completers  # noqa: F401  (registers the shared flags' completers)
    argcomplete.autocomplete(parser, always_complete_options=False)


def shellcode(shell, command="kubectl-gpuisolate"):
    import argcomplete

    return argcomplete.shellcode([command], shell=shell)
