"""The exit codes (docs/output.md, "Exit codes"; keep them in step) and the
signals that end a run with one (``SIGNALS``, the one table).  It imports nothing of ours, so
that every module may import it: errors.py for its classes' codes, interrupts.py for the
signals'.
"""

import signal

EXIT_OK = 0
EXIT_FINDINGS = 1          # status --exit-code: misplaced pods or untainted GPU nodes
EXIT_USAGE = 2             # bad flags, arguments, taint or selector syntax
EXIT_CONFIG = 3            # kubeconfig missing/malformed, unknown context, bad credentials file
EXIT_CONNECTION = 4        # server unreachable, timeout, TLS failure
EXIT_AUTH = 5              # 401 Unauthorized or 403 Forbidden (RBAC)
EXIT_NOT_FOUND = 6         # a named node does not exist, or no GPU nodes were found
EXIT_CONFLICT = 7          # a write kept conflicting, or the taint exists with another value
EXIT_API = 8               # any other API error
EXIT_PREFLIGHT = 9         # evacuate refused before evicting anything
EXIT_INCOMPLETE = 10       # evacuate: pods still pending or failed at the end
EXIT_PYTHON = 11           # interpreter too old (the zipapp's guard)
EXIT_INTERNAL = 12         # a bug: an unexpected exception (rerun with --debug)
EXIT_FENCED = 13           # evacuate --taint-first: a NoExecute taint not applied; the node keeps its
                           # NoSchedule fence
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

SIGNALS = {signal.SIGINT: ("SIGINT", EXIT_SIGINT), signal.SIGTERM: ("SIGTERM", EXIT_SIGTERM)}
