"""kube/retry.py: the one Backoff's parameters, and the instance each retrying caller uses."""

import pytest

from kubectl_gpuisolate.kube import retry
from kubectl_gpuisolate.kube.retry import Backoff


class FixedRandom:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


@pytest.mark.parametrize("jitter", [0.0, 0.4, 0.5, 1.0])
def test_jitter_is_the_random_share_of_the_ceiling(jitter):
    backoff = Backoff(initial=2, factor=2, cap=100, jitter=jitter)
    assert backoff.delay(1, FixedRandom(0.0)) == pytest.approx(4 * (1 - jitter))
    assert backoff.delay(1, FixedRandom(1.0)) == pytest.approx(4)


def test_retry_after_cap_bounds_the_floor_only():
    capped = Backoff(initial=1, factor=2, cap=16, retry_after_cap=10)
    assert capped.delay(0, FixedRandom(0.5), retry_after=600) == 10
    assert capped.delay(0, FixedRandom(0.5), retry_after=3) == 3
    assert capped.delay(5, FixedRandom(1.0), retry_after=600) == 16     # the backoff may exceed it
    assert Backoff().delay(0, FixedRandom(0.5), retry_after=600) == 600  # no cap: honoured in full


def test_the_callers_instances():
    assert [retry.REQUESTS.ceiling(n) for n in range(7)] == [0.25, 0.5, 1, 2, 4, 5, 5]
    assert retry.REQUESTS.delay(0, FixedRandom(0.0)) == pytest.approx(0.15)
    assert {retry.NODE_WRITES.ceiling(n) for n in range(8)} == {0.3}
    assert retry.NODE_WRITES.delay(0, FixedRandom(0.0)) == pytest.approx(0.06)
    assert retry.REQUESTS.retry_after_cap == retry.NODE_WRITES.retry_after_cap == 10
    assert retry.EVICTIONS == Backoff() and retry.EVICTIONS.retry_after_cap is None
    assert [retry.PDB_EVICTIONS.ceiling(n) for n in range(6)] == [0.5, 0.75, 1.125, 1.6875, 2, 2]
