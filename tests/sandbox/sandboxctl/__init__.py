"""Library behind scripts/sandbox: a local Kubernetes control plane with kwok nodes."""
