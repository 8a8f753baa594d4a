"""Transport.request against a scripted connection pool (no network): which answers are sent
again and how long it waits (kube.retry.REQUESTS), a 401 refresh, and the headers every request
carries (credentials, impersonation)."""

import pytest
import urllib3

from kubectl_gpuisolate.errors import (
    ApiNotFound,
    ConnectionFailed,
    Forbidden,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from kubectl_gpuisolate.exits import EXIT_CONNECTION
from kubectl_gpuisolate.flags import ConnectionOptions
from kubectl_gpuisolate.kube import transport
from kubectl_gpuisolate.kube.auth import Credentials
from kubectl_gpuisolate.kube.config import Selected
from kubectl_gpuisolate.kube.retry import REQUESTS


class FixedRandom:
    def random(self):
        return 0.5


class Raw:
    """What urllib3's pool answers: status, headers, data."""

    def __init__(self, status, data=b"{}", headers=None):
        self.status, self.data, self.headers = status, data, headers or {}


class ScriptedPool:
    """Answers each request with the next step: an int status, a Raw, or an exception."""

    def __init__(self, script):
        self.script = list(script)
        self.sent = []

    def request(self, method, url, *, body, headers, timeout, preload_content, redirect):
        self.sent.append((method, url, dict(headers)))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        return step if isinstance(step, Raw) else Raw(step)


class StubCredentials(Credentials):
    def __init__(self, token="t0", refreshable=False):
        self.token, self.refreshable, self.refreshed = token, refreshable, 0

    def headers(self):
        return {"Authorization": f"Bearer {self.token}"}

    def refresh(self):
        self.refreshed += 1
        if self.refreshable:
            self.token = "t1"
        return self.refreshable


def make(script, *, user=None, credentials=None, **options):
    selected = Selected(context="c", cluster_name="c", user_name="u",
                        cluster={"server": "http://127.0.0.1:1"}, user=user or {}, namespace="default")
    sleeps = []
    conn = transport.Transport(selected, ConnectionOptions(**options),
                               credentials=credentials or StubCredentials(),
                               sleep=sleeps.append, rng=FixedRandom())
    conn._pool = ScriptedPool(script)
    return conn, conn._pool, sleeps


RESET = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset"))
REFUSED = urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused")


@pytest.mark.parametrize("failure", [503, 500, 502, 504, 429, RESET, REFUSED],
                         ids=["503", "500", "502", "504", "429", "reset", "refused"])
def test_a_get_is_sent_again_after_a_passing_failure(failure):
    conn, pool, sleeps = make([failure, failure, Raw(200, b'{"ok": 1}')])
    assert conn.get("/api/v1/nodes", what="listing nodes") == {"ok": 1}
    assert len(pool.sent) == 3
    assert sleeps == [REQUESTS.delay(0, FixedRandom()), REQUESTS.delay(1, FixedRandom())]
    assert sleeps[0] < sleeps[1]                                    # it backs off


@pytest.mark.parametrize("failure, error", [(503, ServerError), (429, TooManyRequests),
                                            (RESET, ConnectionFailed)], ids=["503", "429", "reset"])
def test_a_get_gives_up_after_its_attempts_with_the_last_error(failure, error):
    conn, pool, sleeps = make([failure])
    with pytest.raises(error):
        conn.get("/api/v1/nodes", what="listing nodes")
    assert len(pool.sent) == transport.ATTEMPTS == 5
    assert sleeps == [REQUESTS.delay(n, FixedRandom()) for n in range(4)]


def test_retry_after_is_honoured_and_capped():
    conn, pool, sleeps = make([Raw(429, headers={"Retry-After": "3"}),
                               Raw(503, headers={"Retry-After": "600"}), 200])
    conn.get("/api/v1/nodes", what="listing nodes")
    assert sleeps == [3.0, REQUESTS.retry_after_cap] == [3.0, 10.0]


@pytest.mark.parametrize("method", ["POST", "PATCH"])
@pytest.mark.parametrize("failure", [503, 429, RESET], ids=["503", "429", "reset"])
def test_writes_are_not_sent_again_unless_asked(method, failure):
    conn, pool, sleeps = make([failure, 200])
    with pytest.raises((ServerError, TooManyRequests, ConnectionFailed)):
        conn.request(method, "/api/v1/nodes/n1", body={}, what="patching node n1")
    assert len(pool.sent) == 1 and sleeps == []
    conn, pool, sleeps = make([failure, 200])
    assert conn.request(method, "/api/v1/nodes/n1", body={}, what="x", retry=True).status == 200
    assert len(pool.sent) == 2 and len(sleeps) == 1


def test_a_get_is_sent_once_when_told_not_to_retry():
    conn, pool, _ = make([503, 200])
    with pytest.raises(ServerError):
        conn.request("GET", "/api/v1/nodes", retry=False, what="listing nodes")
    assert len(pool.sent) == 1


@pytest.mark.parametrize("status, error", [(403, Forbidden), (404, ApiNotFound), (401, Unauthorized)])
def test_answers_that_cannot_change_are_not_sent_again(status, error):
    conn, pool, sleeps = make([status, 200])
    with pytest.raises(error):
        conn.get("/api/v1/nodes/n1", what="reading node n1")
    assert len(pool.sent) == 1 and sleeps == []


def test_a_tls_failure_is_not_sent_again():
    conn, pool, _ = make([urllib3.exceptions.SSLError("certificate verify failed: self-signed"), 200])
    with pytest.raises(ConnectionFailed) as info:
        conn.get("/api/v1/nodes", what="listing nodes")
    assert len(pool.sent) == 1 and info.value.exit_code == EXIT_CONNECTION
    assert "TLS verification of http://127.0.0.1:1 failed (certificate verify failed)" in str(info.value)


def test_a_timeout_says_so():
    conn, _, _ = make([urllib3.exceptions.ReadTimeoutError(None, "/", "Read timed out.")])
    with pytest.raises(ConnectionFailed) as info:
        conn.get("/api/v1/nodes", what="listing nodes")
    assert "did not answer in time while listing nodes" in str(info.value)


@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_a_401_refreshes_the_credentials_and_sends_once_more(method):
    creds = StubCredentials(refreshable=True)
    conn, pool, sleeps = make([401, 200], credentials=creds)
    assert conn.request(method, "/api/v1/nodes/n1", body={}, what="x").status == 200
    assert creds.refreshed == 1 and sleeps == []
    assert [s[2]["Authorization"] for s in pool.sent] == ["Bearer t0", "Bearer t1"]


def test_a_401_without_anything_to_refresh_is_raised():
    creds = StubCredentials(refreshable=False)
    conn, pool, _ = make([401, 200], credentials=creds)
    with pytest.raises(Unauthorized):
        conn.get("/api/v1/nodes", what="listing nodes")
    assert creds.refreshed == 1 and len(pool.sent) == 1


def test_headers_carry_the_credentials_and_the_kubeconfig_users_impersonation():
    conn, pool, _ = make([200], user={"as": "jane", "as-groups": ["ops", "gpu"]})
    conn.request("PATCH", "/api/v1/nodes/n1", body={}, content_type="application/merge-patch+json",
                 what="x")
    _, _, headers = pool.sent[0]
    assert headers["Authorization"] == "Bearer t0"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert headers["User-Agent"].startswith("kubectl-gpuisolate/")
    assert headers["Impersonate-User"] == "jane"
    assert headers["Impersonate-Group"] == "ops, gpu"              # two header lines, folded


def test_as_flags_win_over_the_kubeconfig_users_impersonation():
    conn, pool, _ = make([200], user={"as": "jane", "as-groups": ["ops"]},
                         as_user="bob", as_groups=("x",))
    conn.get("/api/v1/nodes", what="x")
    headers = pool.sent[0][2]
    assert (headers["Impersonate-User"], headers["Impersonate-Group"]) == ("bob", "x")


def test_no_impersonation_without_as():
    conn, pool, _ = make([200])
    conn.get("/api/v1/nodes", what="x")
    assert not {"Impersonate-User", "Impersonate-Group"} & set(pool.sent[0][2])
