"""kubectl-gpuisolate: keep ordinary pods off a cluster's GPU nodes."""

__version__ = "0.1.0"
