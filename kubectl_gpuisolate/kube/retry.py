"""How long to wait before retrying: capped exponential backoff with jitter."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with equal jitter: attempt n waits in [d/2, d],
    d = min(cap, initial * factor**n); a Retry-After is a lower bound."""

    initial: float = 1.0
    factor: float = 2.0
    cap: float = 16.0

    def ceiling(self, attempt):
        return min(self.cap, self.initial * self.factor ** attempt)

    def delay(self, attempt, rng, retry_after=None):
        ceiling = self.ceiling(attempt)
        delay = ceiling / 2 + rng.random() * ceiling / 2
        return max(delay, float(retry_after)) if retry_after else delay
