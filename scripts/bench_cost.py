"""The API server's own cost of one command, for scripts/bench's limit phase.  Standard library
only."""
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


class ServerCost:
    """The API server's own cost of a command: the CPU seconds its process used (/proc) and the
    requests it served (the sum of apiserver_request_total on /metrics, which does not count the
    scrapes themselves).  Both include the cluster's background (leases, controllers):
    ``rate_now`` measures its rate just before each command, which the report takes off that
    command for its wall time (``idle``, the rate at the start, is only reported).  The scrapes
    are outside the CPU readings.

    With ``quiet``, kwok (the 5,000 simulated kubelets, most of that background: a lease renewal
    per node every ~50 s) is held (SIGSTOP) while the idle rate and each command are measured,
    and let go for SETTLE seconds after.  The scale sandbox's controller manager allows 240 s
    without a renewal (tests/sandbox/sandboxctl/components.py), more than a hold lasts, so no
    node turns NotReady."""

    CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
    SETTLE = 20.0
    DRAIN = 2.0
    WINDOW = 5.0    # seconds of idle measured just before each command (rate_now)

    def __init__(self, state, kubectl, env, quiet=False):
        self.kubectl, self.env = kubectl, env
        self.pid = state["components"]["kube-apiserver"]["pid"]
        self.kwok = state["components"]["kwok"]["pid"] if quiet else None

    @contextlib.contextmanager
    def held(self):
        """kwok stopped for the block (with ``quiet``), then running again for SETTLE seconds."""
        if self.kwok is None:
            yield
            return
        os.kill(self.kwok, signal.SIGSTOP)
        try:
            time.sleep(self.DRAIN)      # what kwok sent last is served before anything is read
            yield
        finally:
            os.kill(self.kwok, signal.SIGCONT)
            time.sleep(self.SETTLE)

    def cpu(self):
        raw = Path(f"/proc/{self.pid}/stat").read_text()
        fields = raw[raw.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / self.CLOCK_TICKS

    def requests(self):
        out = subprocess.run([self.kubectl, "get", "--raw", "/metrics"], env=self.env, capture_output=True,
                             text=True, check=True).stdout
        return sum(float(line.rsplit(" ", 1)[1]) for line in out.splitlines()
                   if line.startswith("apiserver_request_total{"))

    def before(self):
        return self.requests(), self.cpu()

    def since(self, before):
        """(CPU seconds, requests) since ``before``."""
        cpu = self.cpu()
        return cpu - before[1], self.requests() - before[0]

    def rate_now(self):
        """(CPU seconds, requests) per second over the WINDOW just before a command: the
        background taken off that command (the cluster's background drifts over minutes, so
        one figure for the whole run over- or under-states it)."""
        return self._rate(self.WINDOW)

    def _rate(self, seconds):
        before = self.before()
        time.sleep(seconds)
        cpu, requests = self.since(before)
        return cpu / seconds, requests / seconds

    def idle(self, seconds=20.0):
        """(CPU seconds, requests) per second of the API server with no command running."""
        with self.held():
            return self._rate(seconds)
