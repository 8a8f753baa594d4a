"""kube/rules.py: kubectl's flag precedence (flag > kubeconfig > default) and client-go's
validation, with kubectl's own messages (taken from kubectl 1.32/1.33 runs)."""

import pytest

from kubectl_gpuisolate.errors import ConfigError
from kubectl_gpuisolate.exits import EXIT_CONFIG
from kubectl_gpuisolate.flags import ConnectionOptions
from kubectl_gpuisolate.kube import rules
from kubectl_gpuisolate.kube.config import Selected


def selected(cluster=None, user=None):
    return Selected(context="x", cluster_name="c", user_name="u", namespace="default",
                    cluster=dict({"server": "https://file:6443"}, **(cluster or {})), user=user or {})


def applied(cluster=None, user=None, **flags):
    return rules.apply_overrides(selected(cluster, user), ConnectionOptions(**flags))


def test_no_flags_leave_the_file_alone():
    result = applied({"certificate-authority": "/ca", "tls-server-name": "n"}, {"token": "t"})
    assert result.cluster == {"server": "https://file:6443", "certificate-authority": "/ca",
                              "tls-server-name": "n"}
    assert result.user == {"token": "t"}


def test_flags_win_over_the_file():
    result = applied({"certificate-authority": "/ca"}, {"token": "t", "client-certificate": "/c"},
                     server="https://flag:1", token="ft", client_certificate="/fc", client_key="/fk",
                     as_user="jane", as_groups=("g",), as_uid="7")
    assert result.cluster["server"] == "https://flag:1"
    assert result.user == {"token": "ft", "client-certificate": "/fc", "client-key": "/fk",
                           "as": "jane", "as-groups": ["g"], "as-uid": "7"}


def test_the_selected_entries_are_not_changed_in_place():
    original = selected({"certificate-authority": "/ca"}, {"token": "t"})
    rules.apply_overrides(original, ConnectionOptions(token="x", insecure_skip_tls_verify=True))
    assert original.user == {"token": "t"} and original.cluster["certificate-authority"] == "/ca"


@pytest.mark.parametrize("flags, expected", [
    ({"insecure_skip_tls_verify": True}, {"insecure-skip-tls-verify": True, "certificate-authority": ""}),
    ({"certificate_authority": "/flag"},
     {"insecure-skip-tls-verify": False, "certificate-authority": "/flag"}),
    ({"insecure_skip_tls_verify": False}, {"insecure-skip-tls-verify": True, "certificate-authority": "/ca",
                                           "certificate-authority-data": "Zm9v"}),
], ids=["insecure-clears-ca", "ca-flag-clears-data-and-insecure", "false-is-no-override"])
def test_ca_flags_replace_the_files_whole_ca_setting(flags, expected):
    cluster = {"insecure-skip-tls-verify": True, "certificate-authority": "/ca",
               "certificate-authority-data": "Zm9v"}
    result = applied(cluster, **flags).cluster
    assert {k: v for k, v in result.items() if k != "server"} == expected


@pytest.mark.parametrize("flags, name", [
    ({}, "file-name"), ({"tls_server_name": "flag-name"}, "flag-name"),
    ({"server": "https://other:1"}, ""), ({"server": "https://o:1", "tls_server_name": "f"}, "f"),
], ids=["file", "flag", "server-clears", "server-and-flag"])
def test_tls_server_name_follows_the_server_flag(flags, name):
    assert applied({"tls-server-name": "file-name"}, **flags).cluster["tls-server-name"] == name


def test_a_server_without_scheme_is_http_as_kubectl_reads_it():
    assert applied(server="127.0.0.1:6443", certificate_authority="/ca").cluster["server"] == \
        "http://127.0.0.1:6443"


def test_disable_compression_flag():
    assert applied(disable_compression=True).cluster["disable-compression"] is True
    assert "disable-compression" not in applied(disable_compression=False).cluster


def problems(cluster=None, user=None):
    with pytest.raises(ConfigError) as info:
        rules.validate(selected(cluster, user))
    assert info.value.exit_code == EXIT_CONFIG
    return str(info.value)


def test_kubectls_messages_for_the_ca(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    assert problems({"certificate-authority": str(ca), "certificate-authority-data": "eA=="}) == (
        "certificate-authority-data and certificate-authority are both specified for c. "
        "certificate-authority-data will override.")
    assert problems({"insecure-skip-tls-verify": True, "certificate-authority": str(ca)}) == (
        "specifying a root certificates file with the insecure flag is not allowed")
    missing = tmp_path / "nope.crt"
    assert problems({"certificate-authority": str(missing)}) == (
        f"unable to read certificate-authority {missing} for c due to open {missing}: "
        "no such file or directory")


def test_kubectls_messages_for_client_certificates(tmp_path):
    crt, key = tmp_path / "c", tmp_path / "k"
    crt.write_text("c")
    key.write_text("k")
    assert problems(user={"client-certificate": str(crt), "client-certificate-data": "eA==",
                          "client-key": str(key)}) == (
        "client-cert-data and client-cert are both specified for u. client-cert-data will override.")
    assert problems(user={"client-certificate": str(crt), "client-key": str(key),
                          "client-key-data": "eA=="}) == (
        "client-key-data and client-key are both specified for u; client-key-data will override")
    assert problems(user={"client-certificate": str(crt)}) == (
        "client-key-data or client-key must be specified for u to use the clientCert "
        "authentication method.")
    both = problems(user={"client-certificate": "/nope-c", "client-key": "/nope-k"})
    assert both == ("unable to read client-cert /nope-c for u due to open /nope-c: no such file or "
                    "directory; unable to read client-key /nope-k for u due to open /nope-k: no such "
                    "file or directory")
    rules.validate(selected(user={"client-key": "/nope-k"}))       # a key alone is unused


EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "p", "interactiveMode": "Never"}


@pytest.mark.parametrize("change, message", [
    ({"interactiveMode": None}, "interactiveMode must be specified for u to use exec authentication plugin"),
    ({"interactiveMode": "Bogus"}, 'invalid interactiveMode for u: "Bogus"'),
    ({"apiVersion": None}, "apiVersion must be specified for u to use exec authentication plugin"),
    ({"command": None}, "command must be specified for u to use exec authentication plugin"),
    ({"env": [{"value": "v"}]},
     "env variable name must be specified for u to use exec authentication plugin"),
    ({"apiVersion": "client.authentication.k8s.io/v2"},
     'exec plugin: invalid apiVersion "client.authentication.k8s.io/v2"'),
], ids=["no-mode", "bad-mode", "no-api-version", "no-command", "env-without-name", "bad-api-version"])
def test_kubectls_messages_for_exec_plugins(change, message):
    conf = {k: v for k, v in dict(EXEC, **change).items() if v is not None}
    assert problems(user={"exec": conf}) == message


def test_exec_interactive_mode_defaults_as_kubeconfig_v1_does():
    beta = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p"}
    rules.validate(selected(user={"exec": beta}))
    assert rules.interactive_mode(beta) == "IfAvailable"
    assert rules.interactive_mode({"apiVersion": "client.authentication.k8s.io/v1"}) == ""


def test_impersonating_a_uid_needs_a_user():
    assert problems(user={"as-uid": "7"}) == (
        "requesting uid, groups or user-extra for u without impersonating a user")
    rules.validate(selected(user={"as-uid": "7", "as": "jane"}))


def test_in_cluster_is_not_validated():
    rules.validate(Selected(context="in-cluster", cluster_name="", user_name="", namespace="d",
                            cluster={"server": "https://k:443", "certificate-authority": "/nope"},
                            user={}, in_cluster=True))
