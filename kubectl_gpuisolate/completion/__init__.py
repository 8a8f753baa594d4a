"""Shell completion: the completers (``completers``), kubectl's helper protocol
(``kubectl_helper``) and argcomplete (``shell``).  Imports no ``kubernetes``.
"""
