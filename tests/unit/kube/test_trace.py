"""kube/trace.py and its use in transport: -v logs as kubectl's (credentials never printed, at
any level) and the server's Warning headers, printed once each."""

import io
import json
import sys

import pytest

from kubectl_gpuisolate.errors import Unauthorized
from kubectl_gpuisolate.flags import ConnectionOptions
from kubectl_gpuisolate.kube import transport
from kubectl_gpuisolate.kube.auth import KubeconfigUser
from kubectl_gpuisolate.kube.config import Selected
from kubectl_gpuisolate.kube.trace import Trace, Warnings, body_line
from tests.unit.kube.test_transport import Raw, ScriptedPool

TOKEN = "gpuisolate-unit-secret-token-5f1c"
EXEC_TOKEN = "gpuisolate-unit-exec-token-9a2e"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        self.now += 0.25
        return self.now


def traced(level, credentials, answers, err):
    selected = Selected(context="c", cluster_name="c", user_name="u", namespace="default",
                        cluster={"server": "http://127.0.0.1:1"}, user={})
    conn = transport.Transport(selected, ConnectionOptions(verbosity=level), credentials=credentials)
    conn._pool = ScriptedPool(answers)
    conn.trace = Trace(level, err, clock=Clock(), now=lambda: 0.5)
    conn.warnings = Warnings(err)
    return conn


def exec_user(tmp_path):
    helper = tmp_path / "helper"
    answer = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
              "status": {"token": EXEC_TOKEN}}
    helper.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('using {EXEC_TOKEN}')\n"
                      f"print({json.dumps(json.dumps(answer))})\n")
    helper.chmod(0o755)
    return KubeconfigUser({"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                    "interactiveMode": "Never", "command": str(helper)}}, "c")


@pytest.mark.parametrize("level", [6, 7, 8, 9, 10])
@pytest.mark.parametrize("kind", ["token", "exec", "basic"])
def test_no_credential_is_logged_at_any_level(tmp_path, level, kind):
    creds = {"token": lambda: KubeconfigUser({"token": TOKEN}, "c"),
             "exec": lambda: exec_user(tmp_path),
             "basic": lambda: KubeconfigUser({"username": "admin", "password": TOKEN}, "c")}[kind]()
    err = io.StringIO()
    conn = traced(level, creds, [Raw(200, b'{"items": []}'), 401], err)
    conn.get("/api/v1/nodes", what="listing nodes")
    with pytest.raises(Unauthorized):
        conn.request("POST", "/api/v1/x", body={"a": 1}, what="x")
    log = err.getvalue()
    assert '"Response" verb="GET" url="http://127.0.0.1:1/api/v1/nodes" status="200" milliseconds=250' in log
    for secret in (TOKEN, EXEC_TOKEN, "YWRtaW46"):                   # base64 of "admin:" too
        assert secret not in log
    assert ("<masked>" in log) == (level >= 7)
    assert ('"Response Body"' in log) == (level >= 8)


def test_nothing_is_logged_below_6():
    err = io.StringIO()
    traced(5, KubeconfigUser({"token": TOKEN}, "c"), [Raw(200, b"{}")], err).get("/x", what="x")
    assert err.getvalue() == ""


def test_bodies_are_truncated_at_8_and_whole_at_9():
    data = b'{"x": "' + b"a" * 2000 + b'"}'
    assert body_line(data).endswith(f'[truncated {len(data) - 1024} chars]')
    assert '"Response Body" body="{\\"x\\": \\"aaa' in body_line(data)
    assert "truncated" not in body_line(data, full=True) and "a" * 2000 in body_line(data, full=True)


def test_each_server_warning_is_printed_once_as_kubectl_prints_it():
    err = io.StringIO()
    warned = {"Warning": '299 - "v1 Foo is deprecated", 299 - "say \\"hi\\"" "Tue, 01 Dec 2026 00:00:00 GMT"'}
    conn = traced(0, KubeconfigUser({}, "c"),
                  [Raw(200, b"{}", warned), Raw(200, b"{}", warned),
                   Raw(200, b"{}", {"Warning": '199 - "misc"'}), Raw(200, b"{}")], err)
    for _ in range(4):
        conn.get("/x", what="x")
    assert err.getvalue() == 'Warning: v1 Foo is deprecated\nWarning: say "hi"\n'
    assert conn.warnings.count == 2
