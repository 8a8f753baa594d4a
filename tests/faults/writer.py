"""A concurrent writer: another controller that changes node taints and labels
(its own keys, never the GPU taint or the GPU label) straight through the real
API server while the plugin runs.

Every write is guarded: a merge patch or a full PUT carrying the resourceVersion
it read, retried on 409.  After each successful write it records, from the
server's answer, what its keys now are on that node; ``lost()`` then compares
the nodes with that record, so a writer (the plugin) that overwrote a stale
taint list would show up as a lost key."""

import random
import threading

from .cluster import ApiError

PREFIX = "soak.example.com/"
TAINT_KEYS = [f"{PREFIX}t{i}" for i in range(4)]
LABEL_KEYS = [f"{PREFIX}l{i}" for i in range(4)]


def mine(node):
    """(this writer's taints as sorted tuples, its labels) on a node."""
    taints = sorted((t["key"], t.get("value", ""), t["effect"])
                    for t in (node.get("spec") or {}).get("taints") or () if t["key"].startswith(PREFIX))
    labels = {k: v for k, v in (node["metadata"].get("labels") or {}).items() if k.startswith(PREFIX)}
    return taints, labels


class Writer:
    def __init__(self, kube, nodes, seed, *, pause=(0.0, 0.05)):
        self.kube, self.nodes = kube, list(nodes)
        self.rng = random.Random(f"writer|{seed}")
        self.pause = pause
        self.expected = {}
        self.writes = self.conflicts = 0
        self.errors = []
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        for name in self.nodes:
            self.expected[name] = mine(self.kube.get("nodes", name))
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self):
        while not self._stop.is_set():
            try:
                self._one(self.rng.choice(self.nodes))
            except (ApiError, OSError) as exc:
                self.errors.append(str(exc))
                if len(self.errors) > 20:
                    return
            self._stop.wait(self.rng.uniform(*self.pause))

    def _change(self, node):
        """A random change to this writer's keys on ``node`` (mutated in place)."""
        rng = self.rng
        taints = node["spec"].setdefault("taints", [])
        labels = node["metadata"].setdefault("labels", {})
        key = rng.choice(TAINT_KEYS + LABEL_KEYS)
        if key in TAINT_KEYS:
            present = [t for t in taints if t["key"] == key]
            if present and rng.random() < 0.5:
                taints.remove(present[0])
            elif present:
                present[0]["value"] = f"v{rng.randrange(100)}"
            else:
                taints.append({"key": key, "value": f"v{rng.randrange(100)}",
                               "effect": "PreferNoSchedule"})
        elif key in labels and rng.random() < 0.5:
            del labels[key]
        else:
            labels[key] = f"v{rng.randrange(100)}"
        return key

    def _one(self, name):
        for _ in range(100):
            node = self.kube.get("nodes", name)
            before_labels = dict(node["metadata"].get("labels") or {})
            self._change(node)
            try:
                if self.rng.random() < 0.5:
                    labels = dict(node["metadata"]["labels"])
                    labels.update({k: None for k in before_labels if k not in labels})
                    patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"],
                                          "labels": labels},
                             "spec": {"taints": node["spec"]["taints"] or None}}
                    written = self.kube.patch("nodes", name, patch)
                else:
                    written = self.kube.request("PUT", f"/api/v1/nodes/{name}", node)
            except ApiError as exc:
                if exc.status == 409:
                    self.conflicts += 1
                    continue
                raise
            self.writes += 1
            self.expected[name] = mine(written)
            return

    def lost(self, nodes):
        """What differs between the nodes (name -> Node) and this writer's last writes."""
        problems = []
        for name, want in self.expected.items():
            have = mine(nodes[name])
            if have != want:
                problems.append(f"node {name}: writer keys {have} != last written {want}")
        return problems
