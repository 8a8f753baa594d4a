"""All formatting: kubectl-style tables, the seed's node view, json/yaml documents and
stderr progress (``tables``), and what each command prints (``status``, ``evacuate``).
Nothing here talks to the cluster.
"""
