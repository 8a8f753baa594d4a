"""``python -m kubectl_gpuisolate``."""

from .cli import entry_point

entry_point()
