"""``python -m kubectl_gpuisolate``."""

import sys

if sys.version_info < (3, 9):  # README exit code 11; checked before importing anything newer
    sys.stderr.write("error: kubectl-gpuisolate needs Python >= 3.9, found %d.%d; run it with a "
                     "newer python3\n" % tuple(sys.version_info[:2]))
    sys.exit(11)

from .cli import entry_point  # noqa: E402

entry_point()
