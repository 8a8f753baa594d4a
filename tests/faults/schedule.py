"""The proxy's fault schedule (see proxy.py): which fault, if any, a request gets.

Request number n (counted per method and path, with namespaced object names
replaced by ``*``) of the run seeded S gets its fault from
``random.Random(f"{S}|{method} {path}|{n}")``: the schedule depends on the seed
and on each endpoint's request sequence, not on thread timing or generated pod
names.  ``force()`` puts deterministic faults ahead of it."""

import random
import re
import threading
from collections import Counter

BEFORE = ("500", "503", "429", "429-bare", "reset", "stall")
AFTER = ("504", "reset-after", "stall-after")
NODE_WRITE = "409-node"
KINDS = BEFORE + AFTER + (NODE_WRITE,)
_NODE_PATH = re.compile(r"^/api/v1/nodes/[^/]+$")
# Pod names change with every reset; the n-th eviction (say) keeps its fault.
_NAMESPACED = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/namespaces/[^/]+/([^/]+)/[^/]+")


class Schedule:
    """Which fault (or None) a request gets; thread-safe."""

    def __init__(self, seed=0, rate=0.0, kinds=KINDS):
        self._lock = threading.Lock()
        self.reseed(seed, rate, kinds)

    def reseed(self, seed, rate=None, kinds=None):
        with self._lock:
            self.seed = seed
            self.rate = self.rate if rate is None else rate
            self.kinds = tuple(self.kinds if kinds is None else kinds)
            self._seen = Counter()
            self._forced = []

    def force(self, method, path_pattern, kind, times=1):
        """The next ``times`` matching requests get ``kind`` (before the random schedule)."""
        with self._lock:
            self._forced.append([method, re.compile(path_pattern), kind, times])

    def decide(self, method, path, watch):
        with self._lock:
            for rule in self._forced:
                if rule[3] > 0 and rule[0] == method and rule[1].search(path):
                    rule[3] -= 1
                    return rule[2]
            key = method + " " + _NAMESPACED.sub(r"\1/namespaces/*/\2/*", path)
            n = self._seen[key]
            self._seen[key] += 1
            seed, rate, kinds = self.seed, self.rate, self.kinds
        rng = random.Random(f"{seed}|{key}|{n}")
        if rng.random() >= rate:
            return None
        node_write = method in ("PATCH", "PUT") and _NODE_PATH.match(path)
        choices = [k for k in kinds if (k != NODE_WRITE or node_write)
                   and not (watch and k in AFTER)]
        return rng.choice(choices) if choices else None
