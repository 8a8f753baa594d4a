"""The sandbox's own control-plane processes as a fault source: kube-apiserver killed
(SIGKILL) and started again on the same port with the same flags, etcd paused (SIGSTOP) and
resumed, and the API server's CPU time read from /proc (for scripts/bench)."""

import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))
from sandboxctl import components, control, procs  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The components that watch the API server and act on what they see.
CLIENTS = ("kube-controller-manager", "kube-scheduler", "kwok")


class ControlPlane:
    def __init__(self, sandbox_dir):
        self.dir = Path(sandbox_dir).resolve()

    def _state(self):
        return procs.State(self.dir)

    def record(self, name):
        rec = self._state().components().get(name)
        if not rec or not procs.alive(rec):
            raise RuntimeError(f"{name} of the sandbox in {self.dir} is not running")
        return rec

    # -- kube-apiserver ---------------------------------------------------------------------------
    def kill_apiserver(self):
        """SIGKILL: no graceful shutdown, open connections and watches are cut."""
        rec = self.record("kube-apiserver")
        os.kill(rec["pid"], signal.SIGKILL)
        for _ in range(100):
            if not procs.alive(rec):
                return
            time.sleep(0.05)
        raise RuntimeError("kube-apiserver did not die after SIGKILL")

    def start_apiserver(self, timeout=120):
        """Starts it again with the recorded flags and port; returns once /readyz answers."""
        state = self._state()
        lock = state.lock()
        try:
            state = self._state()
            components.start(state, "kube-apiserver", state.data.get("scenario") == "scale",
                             timeout=timeout)
        finally:
            os.close(lock)

    def restart_apiserver(self, down_seconds=2.0):
        self.kill_apiserver()
        time.sleep(down_seconds)
        self.start_apiserver()

    # -- etcd -------------------------------------------------------------------------------------
    def pause_etcd(self):
        os.kill(self.record("etcd")["pid"], signal.SIGSTOP)

    def resume_etcd(self):
        os.kill(self.record("etcd")["pid"], signal.SIGCONT)

    # -- the API server's clients ------------------------------------------------------------------
    def restart_clients(self, timeout=120):
        """Stops and starts the controller-manager, the scheduler and kwok with their recorded
        flags; returns once each is healthy.  What they missed while the API server was down or
        etcd paused can stay in their memory for minutes: after these tests a CI run's reset
        waited over 300 s for a recreated Job's pod (2026-12-05).  So a test that faulted the
        control plane hands the next one clients that start from the API server's state.

        The node leases go with kwok: a new kwok has a new identity, and would wait for the old
        one's leases to run out (40 s) before it plays any pod's stages on their nodes."""
        lock = self._state().lock()
        try:
            state = self._state()
            scale = state.data.get("scenario") == "scale"
            for name in CLIENTS:
                procs.stop(state.components()[name])
                if name == "kwok":
                    control.kube_for(state).request(
                        "DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
                components.start(state, name, scale, timeout=timeout)
        finally:
            os.close(lock)

    # -- cost ---------------------------------------------------------------------------------------
    def cpu_seconds(self, name="kube-apiserver"):
        """User + system CPU time the process has used so far."""
        raw = Path(f"/proc/{self.record(name)['pid']}/stat").read_text()
        fields = raw[raw.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def audit_log(self):
        return components.audit_log(self._state())
