"""The soak's invariants, checked after each run from the real API server's state.

``Checker`` is given the run's spec, the snapshots before and after, the
plugin's exit code and output; every ``check(name, ok, detail)`` is counted per
invariant, and the failed ones are kept with their detail."""

import json
from collections import Counter

from .cluster import GPU_KEY, classify, ref
from .writer import PREFIX

STAYS = ("daemonset", "mirror", "gpu", "tolerates", "finished", "nowhere")
FAILURE_EXITS = (4, 7, 8)      # connection, conflict, API error: allowed under faults


def gpu_value(node):
    """The value of the node's nvidia.com/gpu:NoSchedule taint, or None."""
    for t in (node.get("spec") or {}).get("taints") or ():
        if t["key"] == GPU_KEY and t["effect"] == "NoSchedule":
            return t.get("value", "")
    return None


def other_taints(node):
    return sorted((t["key"], t.get("value", ""), t["effect"])
                  for t in (node.get("spec") or {}).get("taints") or ()
                  if t["key"] != GPU_KEY and not t["key"].startswith(PREFIX))


class Checker:
    def __init__(self, spec, before, after, rc, stdout, stderr):
        self.spec, self.before, self.after = spec, before, after
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.counts = Counter()
        self.failures = []
        self.before_val = {n: gpu_value(before["nodes"][n]) for n in spec.gpu}
        self.after_val = {n: gpu_value(after["nodes"][n]) for n in spec.gpu}

    def check(self, name, ok, detail=""):
        self.counts[name] += 1
        if not ok:
            self.failures.append(f"{name}: {detail}")
        return ok

    # -- common to every run ----------------------------------------------------------------------
    def common(self, violations, pdb_checks, writer):
        self.counts["pdb-min"] += pdb_checks
        self.check("pdb-min", not violations, "; ".join(violations[:5]))
        if writer is not None:      # None: no concurrent node writer in this run
            self.check("writer-keys", not writer.lost(self.after["nodes"]) and not writer.errors,
                       "; ".join(writer.lost(self.after["nodes"]) + writer.errors[:3]))
        for name, node in self.after["nodes"].items():
            self.check("no-cordon", not node["spec"].get("unschedulable"), f"node {name} is cordoned")
            self.check("other-taints", other_taints(node) == other_taints(self.before["nodes"][name]),
                       f"node {name}: {other_taints(self.before['nodes'][name])} -> {other_taints(node)}")
        self.check("no-traceback", "Traceback" not in self.stderr and self.rc != 12,
                   f"exit {self.rc}: {self.stderr[-500:]}")
        if self.rc not in (0, 9, 10):
            lines = self.stderr.strip().splitlines()
            self.check("one-line-error", bool(lines) and lines[-1].startswith("error: ")
                       and sum(1 for line in lines if line.startswith("error:")) == 1,
                       f"exit {self.rc}, stderr {self.stderr[-300:]!r}")
        self._pods_kept()

    def _pods_kept(self):
        """Pods that must survive: protected pods on the evacuated nodes, and every pod elsewhere
        (``spec.targets`` is empty for taint and untaint: every pod must survive)."""
        targets = set(self.spec.targets)
        alive = {uid for uid, p in self.after["pods"].items() if not p["metadata"].get("deletionTimestamp")}
        for uid, pod in self.before["pods"].items():
            node = pod["spec"].get("nodeName")
            kind = classify(pod, self.before_val.get(node) or "true", self.before.get("localClaims"))
            if node in targets and kind in STAYS:
                self.check("protected-pods", uid in alive, f"{kind} pod {ref(pod)} ({uid}) was removed")
            elif node not in targets and kind != "terminating":
                self.check("untargeted-pods", uid in alive, f"pod {ref(pod)} on {node} was removed")

    def _error_exit(self, allowed=FAILURE_EXITS):
        self.check("exit-code", self.rc in allowed, f"exit {self.rc}: {self.stderr[-300:]}")

    # -- taint and untaint --------------------------------------------------------------------------
    def taint(self):
        spec, server = self.spec, self.spec.dry_run == "server"
        conflict = any(v not in (None, "true") for v in self.before_val.values()) and not spec.overwrite
        if self.rc == 0:
            self.check("exit-code", not conflict, "exit 0 although a node has another value")
            want = []
            for n in spec.gpu:
                verb = {None: "tainted", "true": "already tainted"}.get(self.before_val[n], "modified")
                suffix = " (server dry run)" if server and verb != "already tainted" else ""
                want.append(f"node/{n} {verb}{suffix}")
            self.check("summary", self.stdout.splitlines() == want, f"{self.stdout!r} != {want!r}")
            final = self.before_val if server else {n: "true" for n in spec.gpu}
            self.check("gpu-taint", self.after_val == final, f"{self.after_val} != {final}")
        elif self.rc == 7 and conflict:
            self.check("summary", "--overwrite" in self.stderr, self.stderr[-300:])
            self.check("gpu-taint", self.after_val == self.before_val, "written despite the conflict")
        else:
            self._error_exit()
            self._partial("true")

    def untaint(self):
        server = self.spec.dry_run == "server"
        if self.rc == 0:
            want = [f"node/{n} {'not tainted' if self.before_val[n] is None else 'untainted'}"
                    f"{' (server dry run)' if server and self.before_val[n] is not None else ''}"
                    for n in self.spec.gpu]
            self.check("summary", self.stdout.splitlines() == want, f"{self.stdout!r} != {want!r}")
            final = self.before_val if server else {n: None for n in self.spec.gpu}
            self.check("gpu-taint", self.after_val == final, f"{self.after_val} != {final}")
        else:
            self._error_exit()
            self._partial(None)

    def _partial(self, done_value):
        """After a failed run every node is as before, or as the command would leave it."""
        server = self.spec.dry_run == "server"
        for n in self.spec.gpu:
            allowed = {self.before_val[n]} if server else {self.before_val[n], done_value}
            self.check("gpu-taint", self.after_val[n] in allowed,
                       f"node {n}: {self.before_val[n]} -> {self.after_val[n]}")

    # -- evacuate -----------------------------------------------------------------------------------
    def evacuate(self):
        spec = self.spec
        server = spec.dry_run == "server"
        refused = [n for n in spec.targets if self.before_val[n] is None and not spec.taint_first]
        if self.rc not in (0, 9, 10):
            self._error_exit()
            if spec.taint_first:
                return self._partial("true")
            return self.check("gpu-taint", self.after_val == self.before_val,
                              f"{self.before_val} -> {self.after_val}")
        try:
            doc = json.loads(self.stdout)
        except ValueError:
            return self.check("summary", False, f"no JSON summary: {self.stdout[-300:]!r}")
        nodes = {d["name"]: d for d in doc["nodes"]}
        self.check("summary", list(nodes) == list(spec.targets), f"nodes {list(nodes)}")
        left = any(d.get("pending") or d.get("failed") for d in nodes.values())
        want_rc = 9 if refused else (10 if left else 0)
        self.check("exit-code", self.rc == want_rc, f"exit {self.rc}, expected {want_rc} "
                   f"(refused {refused}, pods left {left})")
        for name, d in nodes.items():
            self._evacuated_node(name, d, name in refused, server)
        if spec.taint_first:
            final = {n: (self.before_val[n] if server or self.before_val[n] is not None else "true")
                     for n in spec.targets}
            self.check("gpu-taint", {n: self.after_val[n] for n in spec.targets} == final,
                       f"{self.after_val} != {final}")
        else:
            self.check("gpu-taint", self.after_val == self.before_val,
                       f"{self.before_val} -> {self.after_val}")

    def _evacuated_node(self, name, d, refused, server):
        before = {ref(p): (uid, p) for uid, p in self.before["pods"].items()
                  if p["spec"].get("nodeName") == name}
        alive = {uid for uid, p in self.after["pods"].items() if not p["metadata"].get("deletionTimestamp")}
        value = self.before_val[name] or "true"
        if refused:
            self.check("summary", d["result"] == "refused" and d["refusal"], f"node {name}: {d['result']}")
            for pod_ref, (uid, _) in before.items():
                self.check("refused-untouched", uid in alive, f"pod {pod_ref} on refused node {name}")
            return
        claims = self.before.get("localClaims")
        movable = {r for r, (_, p) in before.items() if classify(p, value, claims) in ("move", "terminating")}
        moved = set(d.get("wouldMove" if server else "moved") or ())
        pending = {p["pod"]: p for p in d.get("pending") or ()}
        failed = {p["pod"] for p in d.get("failed") or ()}
        self.check("summary", moved | set(pending) | failed == movable,
                   f"node {name}: reported {sorted(moved | set(pending) | failed)} "
                   f"!= oracle {sorted(movable)}")
        stayed = {r for refs in (d.get("stayed") or {}).values() for r in refs}
        oracle_stays = {r for r, (_, p) in before.items() if classify(p, value, claims) in STAYS}
        self.check("summary", stayed == oracle_stays,
                   f"node {name}: stayed {sorted(stayed)} != {sorted(oracle_stays)}")
        for pod_ref in moved & set(before):
            uid = before[pod_ref][0]
            if server:
                self.check("dry-run-untouched", uid in alive, f"pod {pod_ref} evicted in a server dry run")
            else:
                self.check("moved-is-gone", uid not in alive,
                           f"pod {pod_ref} reported moved but is still there")
        for pod_ref, entry in pending.items():
            if entry["state"] in ("not-started", "pdb-refused", "pdb-blocked") and pod_ref in before:
                self.check("pending-is-there", before[pod_ref][0] in alive,
                           f"pod {pod_ref} reported {entry['state']} but is gone")
        if server:
            for pod_ref, (uid, _) in before.items():
                self.check("dry-run-untouched", uid in alive, f"pod {pod_ref} gone after a server dry run")
