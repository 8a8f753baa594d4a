"""kube/exec_plugin.py and the exec precedence of KubeconfigUser: plugins run as client-go runs
them (real scripts in tmp_path)."""

import base64
import json
import sys

import pytest

from kubectl_gpuisolate.errors import ConfigError
from kubectl_gpuisolate.exits import EXIT_CONFIG
from kubectl_gpuisolate.kube import exec_plugin
from kubectl_gpuisolate.kube.auth import KubeconfigUser

V1 = "client.authentication.k8s.io/v1"


def helper(tmp_path, answer=None, *, dump=None, code=0):
    """A plugin that records its KUBERNETES_EXEC_INFO and argv in ``dump`` and answers ``answer``."""
    answer = answer or {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "t"}}
    path = tmp_path / "helper"
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"open({str(dump or tmp_path / 'dump')!r}, 'w').write(json.dumps("
                    "{'info': json.loads(os.environ['KUBERNETES_EXEC_INFO']), 'argv': sys.argv[1:], "
                    "'env': os.environ.get('GPUI_X')}))\n"
                    f"print({json.dumps(json.dumps(answer))})\nsys.exit({code})\n")
    path.chmod(0o755)
    return str(path)


def conf(command, **extra):
    return dict({"apiVersion": V1, "interactiveMode": "Never", "command": command}, **extra)


def test_cluster_info_is_given_only_when_asked(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"PEM")
    cluster = {"server": "https://k:6443", "certificate-authority": str(ca), "tls-server-name": "k.internal",
               "insecure-skip-tls-verify": False, "proxy-url": "http://p:1",
               "extensions": [{"name": "other", "extension": {"no": 1}},
                              {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "a"}}]}
    command = helper(tmp_path)
    assert exec_plugin.run(conf(command, provideClusterInfo=True, args=["-a", "b"],
                                env=[{"name": "GPUI_X", "value": "y"}]), cluster, "c") == {"token": "t"}
    seen = json.loads((tmp_path / "dump").read_text())
    assert seen["info"] == {"apiVersion": V1, "kind": "ExecCredential", "spec": {
        "interactive": False, "cluster": {
            "server": "https://k:6443", "tls-server-name": "k.internal", "proxy-url": "http://p:1",
            "certificate-authority-data": base64.b64encode(b"PEM").decode(), "config": {"audience": "a"}}}}
    assert seen["argv"] == ["-a", "b"] and seen["env"] == "y"
    exec_plugin.run(conf(command), cluster, "c")
    assert json.loads((tmp_path / "dump").read_text())["info"]["spec"] == {"interactive": False}


def test_always_needs_a_terminal(tmp_path):
    with pytest.raises(ConfigError) as info:
        exec_plugin.run(conf(helper(tmp_path), interactiveMode="Always"), {}, "c")
    assert "standard input is not a terminal" in str(info.value)
    assert not (tmp_path / "dump").exists()                           # never started


def test_the_install_hint_is_shown_when_the_command_is_missing():
    with pytest.raises(ConfigError) as info:
        exec_plugin.run(conf("gpuisolate-no-such-plugin", installHint="get it\n  from the wiki"), {}, "c")
    assert str(info.value) == ("exec plugin 'gpuisolate-no-such-plugin' of context \"c\" not found: "
                               "get it from the wiki")
    assert info.value.exit_code == EXIT_CONFIG


@pytest.mark.parametrize("answer, fragment", [
    ({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
      "status": {"token": "t"}}, "configured to use API version client.authentication.k8s.io/v1, plugin "
                                 "returned version client.authentication.k8s.io/v1beta1"),
    ({"apiVersion": V1, "kind": "ExecCredential"}, "didn't return a status field"),
    ({"apiVersion": V1, "kind": "ExecCredential", "status": {}}, "didn't return a token or cert/key pair"),
    ({"apiVersion": V1, "kind": "ExecCredential", "status": {"clientCertificateData": "c"}},
     "returned only certificate or key, not both"),
    ({"apiVersion": V1, "kind": "Other", "status": {"token": "t"}}, "printed no ExecCredential JSON"),
], ids=["other-version", "no-status", "empty-status", "cert-only", "wrong-kind"])
def test_the_answer_is_checked_as_client_go_checks_it(tmp_path, answer, fragment):
    with pytest.raises(ConfigError) as info:
        exec_plugin.run(conf(helper(tmp_path, answer)), {}, "c")
    assert fragment in str(info.value)


@pytest.mark.parametrize("own", [{"token": "mine"}, {"tokenFile": "/f"}, {"username": "a", "password": "b"},
                                 {"client-certificate": "/c", "client-key": "/k"}],
                         ids=["token", "token-file", "basic", "cert"])
def test_the_users_own_credentials_win_and_the_plugin_never_runs(tmp_path, own):
    user = KubeconfigUser(dict(own, exec=conf(helper(tmp_path))), "c")
    assert not user.exec_used() and not user.refresh()
    if "token" in own:
        assert user.headers() == {"Authorization": "Bearer mine"}
    assert not (tmp_path / "dump").exists()


def test_the_plugin_runs_for_a_user_without_credentials(tmp_path):
    user = KubeconfigUser({"exec": conf(helper(tmp_path))}, "c", {"server": "https://k"})
    assert user.headers() == {"Authorization": "Bearer t"}
    assert (tmp_path / "dump").exists()
