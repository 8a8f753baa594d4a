"""All formatting: kubectl-style tables, the seed's node view, json/yaml documents and
stderr progress (``tables``), and what each command prints (``status``, ``taint`` for taint and
untaint, ``evacuate``), from the result objects the commands hand over.
Nothing here talks to the cluster.

May import: core.
"""
