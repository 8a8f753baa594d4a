"""Kube.update_node_taints against a scripted transport (no network): conflicts are read again
and retried, a write whose answer was lost keeps its verb, throttling waits as the server asks
(through kube.retry.NODE_WRITES), and what cannot succeed by retrying is raised at once."""

import pytest

from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.core.taints import ALREADY_TAINTED, Taint, add_taint
from kubectl_gpuisolate.errors import ConflictError, ConnectionFailed, Forbidden, ServerError, api_error
from kubectl_gpuisolate.kube.api import Kube, merge_patch
from kubectl_gpuisolate.kube.retry import NODE_WRITES

GPU = Taint("nvidia.com/gpu", "true", "NoSchedule")


class FixedRandom:
    def random(self):
        return 0.5


class ScriptedTransport:
    """One node behind a fake API: GET returns it, PATCH checks the resourceVersion and applies
    the merge patch.  ``script`` says what each PATCH does:
    ok; conflict (another writer got there first); lost-504 / lost-reset (the write lands,
    its answer is lost); 504 / reset (nothing written); 429 (throttled, Retry-After 7); 403."""

    def __init__(self, script, taints=()):
        self.node = {"metadata": {"name": "n1", "resourceVersion": "1"},
                     "spec": {"taints": list(taints)}}
        self.script = list(script)
        self.calls = []

    def get(self, path, params=None, *, what):
        self.calls.append(("GET", path))
        return merge_patch(self.node, {})

    def request(self, method, path, *, body=None, retry=None, **_):
        self.calls.append((method, path, retry))
        step = self.script.pop(0) if self.script else "ok"
        if step == "conflict":
            self._bump()
            raise api_error("the object has been modified", status=409)
        if step in ("504", "reset", "429", "403"):
            raise self._error(step)
        if body["metadata"]["resourceVersion"] != self.node["metadata"]["resourceVersion"]:
            raise api_error("the object has been modified", status=409)
        self.node = merge_patch(self.node, body)
        self._bump()
        if step.startswith("lost-"):
            raise self._error(step[len("lost-"):])
        return Answer(self.node)

    def _bump(self):
        self.node["metadata"]["resourceVersion"] = str(int(self.node["metadata"]["resourceVersion"]) + 1)

    @staticmethod
    def _error(step):
        if step == "reset":
            return ConnectionFailed("cannot reach the API server (connection reset)")
        if step == "429":
            return api_error("Too many requests", status=429, retry_after=7)
        if step == "403":
            return api_error('nodes "n1" is forbidden', status=403)
        return api_error("gateway timeout", status=504)

    def patches(self):
        return [c for c in self.calls if c[0] == "PATCH"]


class Answer:
    def __init__(self, node):
        self.node = node

    def json(self):
        return merge_patch(self.node, {})


def compute(current):
    new, verb = add_taint(current, GPU, overwrite=False)
    return (None if verb == ALREADY_TAINTED else new), verb


def scripted(script, taints=()):
    """(Kube on a ScriptedTransport, the transport, the sleeps it asked for)."""
    fake, sleeps = ScriptedTransport(script, taints), []
    return Kube(fake, sleep=sleeps.append, rng=FixedRandom()), fake, sleeps


def taint(script, *, attempts=8, taints=()):
    kube, fake, sleeps = scripted(script, taints)
    node, verb = kube.update_node_taints("n1", compute, dry_run=DryRun.NONE, attempts=attempts)
    return node, verb, fake, sleeps


def test_a_conflict_is_read_again_and_retried():
    node, verb, fake, sleeps = taint(["conflict", "ok"])
    assert verb == "tainted"
    assert [c[0] for c in fake.calls] == ["GET", "PATCH", "GET", "PATCH"]
    assert all(retry is False for _, _, retry in fake.patches())   # never retried blindly
    assert node["spec"]["taints"] == [GPU.to_api()]
    assert sleeps == [NODE_WRITES.delay(0, FixedRandom())]
    assert 0 < sleeps[0] <= NODE_WRITES.cap


@pytest.mark.parametrize("lost", ["lost-504", "lost-reset"])
def test_a_write_whose_answer_was_lost_keeps_its_verb(lost):
    """The re-read finds the taint already there: that is this run's write, not 'already'."""
    node, verb, fake, sleeps = taint([lost])
    assert verb == "tainted"
    assert [c[0] for c in fake.calls] == ["GET", "PATCH", "GET"]
    assert node["spec"]["taints"] == [GPU.to_api()]
    assert len(sleeps) == 1


def test_a_node_already_tainted_is_reported_so():
    _, verb, fake, sleeps = taint([], taints=[GPU.to_api()])
    assert verb == "already tainted" and fake.patches() == [] and sleeps == []


def test_a_connection_reset_before_the_write_is_retried():
    node, verb, fake, sleeps = taint(["reset", "ok"])
    assert verb == "tainted" and len(fake.patches()) == 2 and len(sleeps) == 1
    assert node["spec"]["taints"] == [GPU.to_api()]


def test_throttling_waits_the_retry_after_through_the_node_write_backoff():
    _, verb, fake, sleeps = taint(["429", "ok"])
    assert verb == "tainted" and len(fake.patches()) == 2
    assert sleeps == [7.0] == [NODE_WRITES.delay(0, FixedRandom(), retry_after=7)]


def test_a_forbidden_write_is_raised_at_once():
    kube, fake, sleeps = scripted(["403"])
    with pytest.raises(Forbidden):
        kube.update_node_taints("n1", compute, dry_run=DryRun.NONE)
    assert len(fake.patches()) == 1 and sleeps == []


def test_conflicts_on_every_attempt_give_a_conflict_error():
    kube, fake, sleeps = scripted(["conflict"] * 8)
    with pytest.raises(ConflictError) as info:
        kube.update_node_taints("n1", compute, dry_run=DryRun.NONE)
    assert "kept changing while writing its taints (8 attempts)" in str(info.value)
    assert info.value.exit_code == 7
    assert len(fake.patches()) == 8 and len(sleeps) == 7      # no wait after the last


def test_a_write_that_keeps_failing_raises_the_real_error_not_kept_changing():
    kube, fake, _ = scripted(["504"] * 3)
    with pytest.raises(ServerError) as info:
        kube.update_node_taints("n1", compute, dry_run=DryRun.NONE, attempts=3)
    assert info.value.status == 504 and "kept changing" not in str(info.value)
    assert len(fake.patches()) == 3
