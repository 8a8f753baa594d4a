"""Fault injection for the reliability tests and scripts/soak: a fault-injecting
HTTPS proxy in front of the sandbox's API server (proxy.py), a concurrent node
writer (writer.py), a PodDisruptionBudget monitor (monitor.py), and helpers for
certificates, kubeconfigs and cluster snapshots (pki.py, cluster.py).

Stdlib only (plus tests/sandbox/sandboxctl for the admin client); everything
binds to 127.0.0.1."""
