"""Shell completion: the completers (``completers``, attached where each flag is defined),
the command line recorded as the parser is built (``registry``), kubectl's helper protocol
over that record (``kubectl_helper``) and argcomplete (``shell``).  Imports no ``kubernetes``.

May import: core, errors, flags, kube (its completers read the cluster).
"""
