"""What the connection flags and cluster fields change on the wire: compression, impersonation
by UID, no credentials for plain http, the proxy kinds; and exec plugins on a terminal."""

import json
import os
import sys

import pytest

from kubectl_gpuisolate.errors import ConfigError
from kubectl_gpuisolate.flags import ConnectionOptions
from kubectl_gpuisolate.kube import exec_plugin, transport
from kubectl_gpuisolate.kube.auth import Credentials, KubeconfigUser
from kubectl_gpuisolate.kube.config import Selected
from tests.unit.kube.test_transport import Raw, ScriptedPool


def conn(cluster=None, user=None, credentials=None, **options):
    selected = Selected(context="c", cluster_name="c", user_name="u", namespace="default",
                        cluster=dict({"server": "https://127.0.0.1:1"}, **(cluster or {})),
                        user={"token": "t"} if user is None else user)
    connection = transport.Transport(selected, ConnectionOptions(**options), credentials=credentials)
    connection._pool = ScriptedPool([Raw(200)])
    return connection


def sent_headers(connection):
    connection.get("/api/v1/nodes", what="x")
    return connection._pool.sent[-1][2]


def test_responses_are_compressed_unless_disabled():
    assert sent_headers(conn())["Accept-Encoding"] == "gzip"
    assert "Accept-Encoding" not in sent_headers(conn({"disable-compression": True}))


def test_impersonation_by_uid_and_extra():
    user = {"token": "t", "as": "jane", "as-uid": "u-1", "as-user-extra": {"scopes": ["a", "b"]}}
    headers = sent_headers(conn(user=user))
    assert headers["Impersonate-Uid"] == "u-1" and headers["Impersonate-Extra-scopes"] == "a, b"
    flags_win = conn(user={"token": "t", "as": "jane", "as-uid": "u-1"}, as_user="bob", as_uid="u-2")
    assert sent_headers(flags_win)["Impersonate-Uid"] == "u-2"


def test_a_plain_http_server_is_never_sent_the_users_credentials():
    plain = conn({"server": "http://127.0.0.1:1"}, user={"token": "secret"})
    assert type(plain.credentials) is Credentials and "Authorization" not in sent_headers(plain)
    assert sent_headers(conn(user={"token": "secret"}))["Authorization"] == "Bearer secret"


def test_a_socks5_proxy_url_works_or_says_what_it_needs():
    try:
        import socks  # noqa: F401  (PySocks)
    except ImportError:
        with pytest.raises(ConfigError) as info:
            conn({"proxy-url": "socks5://127.0.0.1:1080"})
        assert "PySocks" in str(info.value) and "socks5://127.0.0.1:1080" in str(info.value)
    else:
        from urllib3.contrib.socks import SOCKSProxyManager
        assert isinstance(conn({"proxy-url": "socks5://127.0.0.1:1080"})._make_pool(1), SOCKSProxyManager)
    with pytest.raises(ConfigError) as info:
        conn({"proxy-url": "ftp://127.0.0.1:21"})
    assert "not supported" in str(info.value)


def test_an_exec_plugin_on_a_terminal_is_interactive_and_gets_stdin(tmp_path, monkeypatch):
    """IfAvailable and Always on a terminal: spec.interactive is true and stdin is the terminal's."""
    leader, follower = os.openpty()
    dump = tmp_path / "dump"
    helper = tmp_path / "helper"
    answer = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                         "status": {"token": "t"}})
    helper.write_text(f"#!{sys.executable}\nimport json, os\nopen({str(dump)!r}, 'w').write(json.dumps("
                      "[json.loads(os.environ['KUBERNETES_EXEC_INFO'])['spec']['interactive'], "
                      "os.isatty(0)]))\n"
                      f"print({json.dumps(answer)})\n")
    helper.chmod(0o755)
    with os.fdopen(follower, "r") as terminal:
        monkeypatch.setattr(sys, "stdin", terminal)
        for mode, expected in (("IfAvailable", [True, True]), ("Always", [True, True]),
                               ("Never", [False, False])):
            user = KubeconfigUser({"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                            "interactiveMode": mode, "command": str(helper)}}, "c")
            assert user.headers() == {"Authorization": "Bearer t"}
            assert json.loads(dump.read_text()) == expected, mode
    os.close(leader)
    assert exec_plugin.TIMEOUT > 0
