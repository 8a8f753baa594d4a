"""The floor of evacuate at the limit (scripts/bench, issue #35 part 1): the cluster's own
replacement cycle of one budget, and what the plugin adds to each cycle.

- ``Recorder``: two ``kubectl get --watch`` streams, the bench's pods and its budgets, each event
  stamped with the time it arrived here.
- ``floor_cycles``: evicts the pods of one budget one at a time, each as soon as the budget allows,
  and times each cycle from the watch: eviction accepted (the pod's deletionTimestamp first
  seen) → a new pod of its ReplicaSet Ready → the budget's ``disruptionsAllowed`` back to 1.
- ``run_figures``: a plugin run at -v=6 (its eviction requests, each with the time it was sent
  and its status) beside the recorder's events of that run: the same cycles under the run's
  load, the plugin's share of each (the budget seen allowing → the sending of the next request that
  it accepts), the refused share of the requests and the first eviction's latency.

Pods are named after their budget: the bench's pod ``app-07-13`` is under budget ``app-07``.
"""
import json
import os
import re
import subprocess
import threading
import time

import bench_evacuate as evac

# The plugin's -v=6 line of one eviction request (kube/trace.py, kubectl's format).
EVICTION = re.compile(r'^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) .*"Response" verb="POST" '
                      r'url="[^"]*/pods/([^/"]+)/eviction[^"]*" status="(\d*)[^"]*".* milliseconds=(\d+)')


def budget_of(pod_name):
    return pod_name.rsplit("-", 1)[0]


def _ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


class Recorder:
    """The bench's app pods and budgets as watched by kubectl, from now on: ``events`` holds
    (arrival time, kind, name, what) with kind "pod" (what: "deleting", "ready" or "seen") or
    "pdb" (what: disruptionsAllowed)."""

    def __init__(self, kubectl, env):
        self.events, self._lock = [], threading.Lock()
        self._procs = []
        for resource, selector in (("pods", f"{evac.LABEL}=app"), ("pdb", None)):
            cmd = [kubectl, "get", resource, "-n", evac.NS, "--watch", "--output-watch-events", "-o", "json"]
            cmd += ["-l", selector] if selector else []
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            self._procs.append(proc)
            threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        decoder, buffer = json.JSONDecoder(), ""
        for chunk in iter(lambda: os.read(proc.stdout.fileno(), 1 << 16), b""):
            buffer += chunk.decode(errors="replace")
            while True:
                buffer = buffer.lstrip()
                try:
                    event, end = decoder.raw_decode(buffer)
                except ValueError:
                    break
                buffer = buffer[end:]
                self._note(time.time(), event)

    def _note(self, stamp, event):
        obj = event.get("object") or {}
        if obj.get("kind", "").endswith("List"):     # kubectl prints the first list a page at a time
            for item in obj.get("items") or ():
                self._note(stamp, {"type": "ADDED", "object": dict(item, kind=obj["kind"][:-4])})
            return
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "PodDisruptionBudget":
            record = ("pdb", meta.get("name"), (obj.get("status") or {}).get("disruptionsAllowed") or 0)
        elif event.get("type") == "DELETED":
            return
        else:
            what = "deleting" if meta.get("deletionTimestamp") else "ready" if _ready(obj) else "seen"
            record = ("pod", meta.get("name"), what)
        with self._lock:
            self.events.append((stamp,) + record)

    def since(self, start):
        with self._lock:
            return [e for e in self.events if e[0] >= start]

    def wait_for(self, check, what, timeout=600.0):
        # 600 s: right after the workload's reset, a loaded controller-manager has taken over
        # 120 s for one budget's first cycle (2026-12-07; 65 s the run before).
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = check(self.events)
            if found is not None:
                return found
            time.sleep(0.02)
        raise SystemExit(f"bench: the floor's watch did not see {what} in {timeout:.0f} s")

    def close(self):
        for proc in self._procs:
            proc.kill()
            proc.wait()


def allowing_again(events, budget, after):
    """The first time after ``after`` that ``budget`` was seen allowing where it was last seen
    allowing none (that last sight may come before ``after``: the eviction writes the budget
    before it deletes the pod, and the two streams arrive in either order)."""
    last = None
    for stamp, kind, name, what in events:
        if kind != "pdb" or name != budget:
            continue
        if stamp > after and last == 0 and what >= 1:
            return stamp
        last = what
    return None


def cycles_of(events, start):
    """Per accepted eviction after ``start`` (its deletion first seen): (budget, accepted, a new pod
    of its budget Ready, the budget allowing again); None where the run saw no end."""
    seen, ready_first, deleting_first = set(), {}, {}
    for stamp, kind, name, what in events:
        if kind != "pod":
            continue
        if stamp < start:
            seen.add(name)
        elif what == "deleting":
            deleting_first.setdefault(name, stamp)
        elif what == "ready" and name not in seen:
            ready_first.setdefault(name, stamp)
    out = []
    for name, accepted in sorted(deleting_first.items(), key=lambda item: item[1]):
        budget = budget_of(name)
        ready = min((t for n, t in ready_first.items() if budget_of(n) == budget and t > accepted),
                    default=None)
        out.append((budget, accepted, ready, allowing_again(events, budget, accepted)))
    return out


def _evict(workload, name):
    body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": name, "namespace": evac.NS}})
    workload.k("create", "--raw", f"/api/v1/namespaces/{evac.NS}/pods/{name}/eviction", "-f", "-",
               stdin=body)


def floor_cycles(workload, kubectl, env, budget="app-00", cycles=12):
    """Seconds of each of ``cycles`` cycles of ``budget`` alone (see the module); the workload
    is reset before it and needs a reset after it."""
    recorder = Recorder(kubectl, env)
    try:
        recorder.wait_for(lambda events: True if any(e[1] == "pdb" and e[2] == budget for e in events)
                          else None, f"budget {budget}")
        times = []
        for _ in range(cycles):
            name = next(p["metadata"]["name"] for p in workload.pods("app")
                        if budget_of(p["metadata"]["name"]) == budget and _ready(p))
            start = time.time()
            _evict(workload, name)
            accepted = recorder.wait_for(lambda events, name=name, start=start: next(
                (e[0] for e in events if e[0] >= start - 1 and e[2] == name and e[3] == "deleting"), None),
                f"pod {name} deleting")
            again = recorder.wait_for(lambda events, at=accepted: allowing_again(events, budget, at),
                                      f"budget {budget} allowing again")
            times.append(again - accepted)
        return times
    finally:
        recorder.close()


def requests_of(stderr_text):
    """(sent at, pod name, HTTP status) of each eviction request in a -v=6 log."""
    year = time.localtime().tm_year
    out = []
    for line in stderr_text.splitlines():
        m = EVICTION.match(line)
        if not m:
            continue
        month, day, hour, minute, second, micros, name, status, millis = m.groups()
        stamp = time.mktime((year, int(month), int(day), int(hour), int(minute), int(second), 0, 0, -1))
        out.append((stamp + int(micros) / 1e6 - int(millis) / 1000.0, name, int(status or 0)))
    return out


def run_figures(events, requests, start):
    """What one plugin run shows (see the module): a dict of lists of seconds and counts."""
    cycles = cycles_of(events, start)
    sends = {}       # the accepted requests: a refused one is counted as such, not as a share
    for sent, name, status in requests:
        if status in (200, 201):
            sends.setdefault(budget_of(name), []).append(sent)
    shares = []      # below 0 where the plugin's watch saw the budget allow before the bench's
    for budget, accepted_at, _, again in cycles:
        later = [t for t in sends.get(budget, ()) if t > accepted_at]
        if later and again is not None:
            shares.append(min(later) - again)
    accepted = [sent for sent, _, status in requests if status in (200, 201)]
    return {"cycles": [again - accepted_at for _, accepted_at, _, again in cycles if again],
            "ready": [ready - accepted_at for _, accepted_at, ready, _ in cycles if ready],
            "shares": shares,
            "requests": len(requests),
            "refused": sum(status == 429 for _, _, status in requests),
            "first": min(accepted) - start if accepted else None}


class ObservedRuns:
    """A ``timed`` for bench_evacuate.measure: the plugin's runs go beside a Recorder, their
    figures kept in ``runs``; the other side's commands are timed as they are."""

    def __init__(self, timed, kubectl, expected_pods, expected_budgets):
        self._timed, self._kubectl = timed, kubectl
        self._expected = {"pod": expected_pods, "pdb": expected_budgets}
        self.runs = []

    def _listed(self, events):
        counts = {kind: sum(e[1] == kind for e in events) for kind in self._expected}
        return True if all(counts[k] >= n for k, n in self._expected.items()) else None

    def __call__(self, cmd, env):
        if "evacuate" not in cmd:
            return self._timed(cmd, env)
        recorder = Recorder(self._kubectl, env)
        try:
            recorder.wait_for(self._listed, "the first lists of the pods and budgets")
            start = time.time()
            sample = self._timed(cmd, env, whole_err=True)
            time.sleep(1.0)             # the run's last events on their way
        finally:
            recorder.close()
        self.runs.append(run_figures(recorder.events, requests_of(sample.err), start))
        sample.err = sample.err[-4000:]
        return sample
