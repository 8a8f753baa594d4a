"""Shell completion (filled in by the distribution issue)."""


def autocomplete(parser):
    import argcomplete
    argcomplete.autocomplete(parser)
