"""How long to wait before retrying: capped exponential backoff with jitter, and the one
instance of it each retrying caller uses (their differences are the parameters, not the code)."""

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with jitter: attempt n waits in [d * (1 - jitter), d],
    d = min(cap, initial * factor**n).  A Retry-After (capped at ``retry_after_cap``, when
    set) is a lower bound."""

    initial: float = 1.0
    factor: float = 2.0
    cap: float = 16.0
    jitter: float = 0.5                 # 0.5: "equal jitter", half fixed and half random
    retry_after_cap: Optional[float] = None

    def ceiling(self, attempt):
        return min(self.cap, self.initial * self.factor ** attempt)

    def delay(self, attempt, rng, retry_after=None):
        """Seconds to wait after failed attempt ``attempt`` (0-based); ``rng`` has ``random()``."""
        ceiling = self.ceiling(attempt)
        delay = ceiling * (1 - self.jitter) + rng.random() * ceiling * self.jitter
        if not retry_after:
            return delay
        floor = float(retry_after)
        if self.retry_after_cap is not None:
            floor = min(floor, self.retry_after_cap)
        return max(delay, floor)


# GETs and other safe calls (kube/transport.py): 0.15-0.25 s, doubling, at most 5 s; a
# Retry-After waits at most 10 s (the request has few attempts; better to fail and say so).
REQUESTS = Backoff(initial=0.25, factor=2.0, cap=5.0, jitter=0.4, retry_after_cap=10.0)

# Re-reading a node after a conflicting or failed taint write (kube/api.py): short and flat,
# another writer is usually done at once; a Retry-After waits at most 10 s.
NODE_WRITES = Backoff(initial=0.3, factor=1.0, cap=0.3, jitter=0.8, retry_after_cap=10.0)

# Evictions the server refused, but not because of a PDB (evacuation/engine.py): 0.5-1 s,
# doubling to 8-16 s; the engine's deadline bounds the total, so the server's Retry-After is
# honoured in full.
EVICTIONS = Backoff()

# Evictions a PodDisruptionBudget refused (429 with a DisruptionBudget cause, which carries no
# Retry-After): the budget allows the next one as soon as the pod evicted before is replaced and
# healthy, usually within a second or two, and the engine retries only one pod per budget at a
# time, so the wait stays short: 0.25-0.5 s, growing by half, at most 1-2 s (kubectl drain: 5 s).
PDB_EVICTIONS = Backoff(initial=0.5, factor=1.5, cap=2.0)
