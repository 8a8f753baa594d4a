"""evacuation/policy.py and kube/retry.py: the response table (each Eviction answer and what
it means, by the error's type), the judgement of the pod read after a 409, and capped
exponential backoff with jitter, Retry-After as a floor."""

import json
import random

import pytest

from kubectl_gpuisolate.errors import ApiError, ConnectionFailed, api_error
from kubectl_gpuisolate.evacuation import policy as ev
from kubectl_gpuisolate.evacuation.engine import ON_VERDICT
from kubectl_gpuisolate.evacuation.plan import Target
from kubectl_gpuisolate.evacuation.policy import Kind, after_conflict, classify
from kubectl_gpuisolate.kube.retry import Backoff
from kubectl_gpuisolate.kube.transport import Response, status_error

from ..evict_fakes import (
    CONFLICT,
    MULTI_PDB,
    NOT_FOUND,
    NS_TERMINATING,
    RBAC_403,
    pdb_429,
    server_error,
    throttled,
)


def target(name, pdbs=()):
    return Target("default", name, f"uid-{name}", tuple(pdbs))


# -- the response table -------------------------------------------------------------------------
@pytest.mark.parametrize("exc, kind, note_part", [
    (pdb_429(), ev.V_PDB, "PDB default/web: needs 2 healthy, has 1"),
    (api_error("x", status=429, retry_after=10, causes=[{
        "reason": "DisruptionBudget",
        "message": "The disruption budget web is still being processed by the server."}]),
     ev.V_PDB, "PDB default/web: still being processed"),
    (throttled(), ev.V_RETRY, "throttled"),
    (MULTI_PDB, ev.V_FATAL, "several PodDisruptionBudgets (one, two)"),
    (server_error(500), ev.V_RETRY, "HTTP 500"),
    (server_error(502), ev.V_RETRY, "HTTP 502"),
    (server_error(503), ev.V_RETRY, "HTTP 503"),
    (server_error(504), ev.V_RETRY, "HTTP 504"),
    (NOT_FOUND, ev.V_DONE, "already gone"),
    (CONFLICT, ev.V_CONFLICT, "409"),
    (NS_TERMINATING, ev.V_RETRY, "namespace default is terminating"),
    (RBAC_403, ev.V_FATAL, 'cannot create resource "pods/eviction"'),
    (api_error("bad request", status=400), ev.V_FATAL, "bad request"),
    (ConnectionFailed("cannot reach the API server"), ev.V_RETRY, "network error"),
])
def test_classify(exc, kind, note_part):
    verdict = classify(exc, target("a", pdbs=("one", "two")))
    assert verdict.kind == kind
    assert note_part in verdict.note


def test_classify_keeps_retry_after():
    assert classify(pdb_429(retry_after=10), target("a")).retry_after == 10
    assert classify(throttled(retry_after=3), target("a")).retry_after == 3
    assert classify(pdb_429(), target("a")).retry_after is None


def test_verdict_kinds_are_an_enum_and_the_engine_handles_each_one():
    assert classify(NOT_FOUND, target("a")).kind is Kind.DONE
    assert {k.value for k in Kind} == {"done", "pdb", "retry", "fatal", "conflict", "terminating"}
    # A conflict is never acted on as such: after_conflict turns it into another kind first.
    assert set(ON_VERDICT) == set(Kind) - {Kind.CONFLICT}


# -- after a 409: the pod read again ------------------------------------------------------------
def read_pod(uid="uid-a", terminating=False):
    meta = {"name": "a", "namespace": "default", "uid": uid}
    if terminating:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"metadata": meta}


@pytest.mark.parametrize("pod_or_error, kind, note", [
    (api_error('pods "a" not found', status=404), Kind.DONE, "gone (not found after a conflict)"),
    (api_error("forbidden", status=403), Kind.RETRY, "conflict, then HTTP 403 reading the pod"),
    (server_error(503), Kind.RETRY, "conflict, then HTTP 503 reading the pod"),
    (ConnectionFailed("reset"), Kind.RETRY, "conflict, then a network error reading the pod"),
    (read_pod(uid="uid-new"), Kind.DONE, "gone (replaced by a new pod with the same name)"),
    (read_pod(uid="uid-new", terminating=True), Kind.DONE,
     "gone (replaced by a new pod with the same name)"),
    (read_pod(terminating=True), Kind.TERMINATING, "is already terminating"),
    (read_pod(), Kind.RETRY, "conflict (HTTP 409)"),
], ids=["404", "403", "503", "network", "new-uid", "new-uid-terminating", "same-uid-terminating",
        "same-uid-alive"])
def test_after_conflict(pod_or_error, kind, note):
    verdict = after_conflict(target("a"), pod_or_error)
    assert (verdict.kind, verdict.note, verdict.retry_after) == (kind, note, None)


# -- backoff ------------------------------------------------------------------------------------
def test_backoff_grows_and_is_capped():
    backoff = Backoff(initial=1, factor=2, cap=16)
    assert [backoff.ceiling(n) for n in range(7)] == [1, 2, 4, 8, 16, 16, 16]


class FixedRandom:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


@pytest.mark.parametrize("attempt", range(8))
def test_backoff_jitter_stays_within_half_to_full_ceiling(attempt):
    backoff = Backoff(initial=1, factor=2, cap=16)
    ceiling = backoff.ceiling(attempt)
    assert backoff.delay(attempt, FixedRandom(0.0)) == ceiling / 2
    assert backoff.delay(attempt, FixedRandom(0.999999)) == pytest.approx(ceiling, rel=1e-5)
    rng = random.Random(attempt)
    delays = [backoff.delay(attempt, rng) for _ in range(500)]
    assert all(ceiling / 2 <= d <= ceiling for d in delays)
    assert len(set(delays)) > 1          # jittered, not constant


def test_retry_after_is_a_floor_not_a_cap():
    backoff = Backoff(initial=1, factor=2, cap=16)
    assert backoff.delay(0, FixedRandom(0.5), retry_after=10) == 10
    assert backoff.delay(5, FixedRandom(1.0), retry_after=2) == 16


# -- the table read by type, from answers as the transport maps them ------------------------------
def wire(status, message="m", **details):
    body = {"kind": "Status", "message": message, "code": status, "details": details}
    return status_error(Response(status, {}, json.dumps(body).encode()), "evicting pod default/a")


@pytest.mark.parametrize("exc, kind", [
    (wire(404), ev.V_DONE),
    (wire(409), ev.V_CONFLICT),
    (wire(429, causes=[{"reason": "DisruptionBudget", "message": "The disruption budget web "
                                                                  "needs 2 healthy pods and has 1"}]),
     ev.V_PDB),
    (wire(429), ev.V_RETRY),
    (wire(500, "This pod has more than one PodDisruptionBudget, which the eviction subresource "
               "does not support."), ev.V_FATAL),
    (wire(501), ev.V_RETRY),
    (wire(503), ev.V_RETRY),
    (wire(403, causes=[{"reason": "NamespaceTerminating"}]), ev.V_RETRY),
    (wire(403), ev.V_FATAL),
    (wire(401), ev.V_FATAL),
    (wire(410), ev.V_FATAL),
    (wire(422), ev.V_FATAL),
], ids=["404", "409", "429-pdb", "429", "500-multi-pdb", "501", "503", "403-terminating", "403",
        "401", "410", "422"])
def test_classify_answers_from_the_wire(exc, kind):
    assert classify(exc, target("a", pdbs=("one", "two"))).kind == kind


def test_classify_goes_by_type_not_by_a_status_number():
    """A bare ApiError that merely carries 404 is not the 404 class: the type decides."""
    assert classify(ApiError("odd", status=404), target("a")).kind == ev.V_FATAL


# -- every answer word for word (found by mutation testing, docs/testing.md) ------------------------
def answer(status, message="the server's message", **kwargs):
    """An Eviction answer as the kube layer raises it (the one place that builds them here)."""
    return api_error(message, status=status, **kwargs)


def pdb_cause(message):
    return {"reason": "DisruptionBudget", "message": message}


NEEDS_2_HAS_1 = "The disruption budget web needs 2 healthy pods and has 1 currently"
MULTI_PDB_MESSAGE = ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                     "does not support.")
FIX_THE_PDBS = "which the eviction API refuses; fix the PDBs"

# (id, answer, the target's PDBs, kind, note, retry_after); the target is in namespace "prod".
CLASSIFY_CASES = [
    ("network", ConnectionFailed("cannot reach"), (), ev.V_RETRY,
     "the API server did not answer (network error)", None),
    ("gone", answer(404, retry_after=4), (), ev.V_DONE, "already gone", None),
    ("conflict", answer(409, retry_after=4), (), ev.V_CONFLICT, "conflict (HTTP 409)", None),
    ("pdb", answer(429, retry_after=5, causes=[pdb_cause(NEEDS_2_HAS_1)]), (), ev.V_PDB,
     "PDB prod/web: needs 2 healthy, has 1", 5),
    ("pdb-first-budget-cause", answer(429, causes=[
        {"reason": "Other", "message": "The disruption budget other needs 9 healthy pods and has 0"},
        pdb_cause(NEEDS_2_HAS_1), pdb_cause("The disruption budget db needs 3 healthy pods and has 0")]),
     (), ev.V_PDB, "PDB prod/web: needs 2 healthy, has 1", None),
    ("pdb-cause-without-message", answer(429, causes=[{"reason": "DisruptionBudget"}]), (), ev.V_PDB,
     "a PodDisruptionBudget allows no disruption now", None),
    ("throttled", answer(429, retry_after=3), (), ev.V_RETRY, "throttled by the API server (HTTP 429)", 3),
    ("throttled-other-cause", answer(429, causes=[{"reason": "Other", "message": NEEDS_2_HAS_1}]), (),
     ev.V_RETRY, "throttled by the API server (HTTP 429)", None),
    ("multi-pdb", answer(500, MULTI_PDB_MESSAGE, retry_after=2), ("one", "two"), ev.V_FATAL,
     f"matched by several PodDisruptionBudgets (one, two), {FIX_THE_PDBS}", None),
    ("multi-pdb-names-unknown", answer(500, MULTI_PDB_MESSAGE), (), ev.V_FATAL,
     f"matched by several PodDisruptionBudgets (names not known when the run started), {FIX_THE_PDBS}",
     None),
    ("multi-pdb-text-on-503", answer(503, MULTI_PDB_MESSAGE, retry_after=2), ("one", "two"), ev.V_RETRY,
     "HTTP 503 from the API server", 2),
    ("server-error", answer(500, retry_after=7), (), ev.V_RETRY, "HTTP 500 from the API server", 7),
    ("server-error-599", answer(599), (), ev.V_RETRY, "HTTP 599 from the API server", None),
    ("below-500-is-fatal", answer(499, "odd answer"), (), ev.V_FATAL, "odd answer", None),
    ("namespace-terminating", answer(403, causes=[{"reason": "Other"}, {"reason": "NamespaceTerminating"}]),
     (), ev.V_RETRY, "namespace prod is terminating", None),
    ("forbidden", answer(403, "forbidden: ask for pods/eviction", causes=[{"reason": "Other"}]), (),
     ev.V_FATAL, "forbidden: ask for pods/eviction", None),
    ("terminating-cause-on-400", answer(400, "bad request", causes=[{"reason": "NamespaceTerminating"}]),
     (), ev.V_FATAL, "bad request", None),
    ("unauthorized", answer(401, "Unauthorized", retry_after=1), (), ev.V_FATAL, "Unauthorized", None),
]


@pytest.mark.parametrize("exc, pdbs, kind, note, retry_after", [c[1:] for c in CLASSIFY_CASES],
                         ids=[c[0] for c in CLASSIFY_CASES])
def test_classify_word_for_word(exc, pdbs, kind, note, retry_after):
    verdict = classify(exc, Target("prod", "a", "uid-a", pdbs))
    assert verdict == ev.Verdict(kind, note, retry_after)


@pytest.mark.parametrize("message, note", [
    (NEEDS_2_HAS_1, "PDB prod/web: needs 2 healthy, has 1"),
    ("The disruption budget db needs 1 healthy pod and has 0 currently",
     "PDB prod/db: needs 1 healthy, has 0"),
    ("The disruption budget db needs -1 healthy pods and has -2", "PDB prod/db: needs -1 healthy, has -2"),
    ("The disruption budget web is still being processed by the server.",
     "PDB prod/web: still being processed by the server"),
    ("The disruption budget web is odd", "PDB: The disruption budget web is odd"),
    ("still being processed", "PDB: still being processed"),
    ("no budget here", "PDB: no budget here"),
    ("", "a PodDisruptionBudget allows no disruption now"),
    (None, "a PodDisruptionBudget allows no disruption now"),
], ids=["needs-has", "singular", "negative", "processing", "name-only", "processing-no-name", "other",
        "empty", "none"])
def test_pdb_note(message, note):
    assert ev.pdb_note("prod", message) == note
