"""kube/auth.py's Credentials kinds and kube/config.py's in-cluster config: the pod's service
account from fake files in tmp_path, auth-provider plugins through a stubbed loader (and once
through the real kubernetes loader, offline), and which kind a context gets."""

import base64
import json
import sys
import time
import types

import certifi
import pytest

from kubectl_gpuisolate.errors import ConfigError
from kubectl_gpuisolate.exits import EXIT_CONFIG
from kubectl_gpuisolate.flags import ConnectionOptions
from kubectl_gpuisolate.kube import KubeApi, api, auth, config
from kubectl_gpuisolate.kube.config import Selected

ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def account(tmp_path, monkeypatch):
    """A fake service-account directory (token, ca.crt, namespace) that config and auth read."""
    (tmp_path / "token").write_text("token-one\n")
    (tmp_path / "ca.crt").write_text(open(certifi.where(), encoding="ascii").read())
    (tmp_path / "namespace").write_text("gpu-ops\n")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT_DIR", str(tmp_path))
    return tmp_path


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def one_line_config_error(info, *needles):
    assert info.value.exit_code == EXIT_CONFIG and "\n" not in str(info.value)
    for needle in needles:
        assert needle in str(info.value)


# -- in-cluster -------------------------------------------------------------------------------
def test_in_cluster_selects_the_service_host_ca_and_namespace(account):
    selected = config.in_cluster(environ=ENV)
    assert selected.in_cluster and selected.user == {} and selected.user_name == ""
    assert selected.cluster == {"server": "https://10.96.0.1:443",
                                "certificate-authority": str(account / "ca.crt")}
    assert selected.namespace == "gpu-ops"
    assert config.in_cluster("mine", environ=ENV).namespace == "mine"      # --namespace wins


def test_in_cluster_namespace_defaults_without_its_file(account):
    (account / "namespace").unlink()
    assert config.in_cluster(environ=ENV).namespace == "default"


@pytest.mark.parametrize("host, server", [("fd00::1", "https://[fd00::1]:6443"),
                                          ("[fd00::1]", "https://[fd00::1]:6443"),
                                          ("kubernetes.default.svc", "https://kubernetes.default.svc:6443")])
def test_in_cluster_server_brackets_an_ipv6_host(account, host, server):
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "6443"}
    assert config.in_cluster(environ=environ).cluster["server"] == server


@pytest.mark.parametrize("environ", [{}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}])
def test_in_cluster_without_the_service_variables(account, environ):
    with pytest.raises(ConfigError) as info:
        config.in_cluster(environ=environ)
    one_line_config_error(info, "in-cluster configuration failed", "KUBERNETES_SERVICE_PORT")


@pytest.mark.parametrize("broken", ["missing", "empty"])
def test_in_cluster_without_a_ca(account, broken):
    if broken == "missing":
        (account / "ca.crt").unlink()
    else:
        (account / "ca.crt").write_text("")
    with pytest.raises(ConfigError) as info:
        config.in_cluster(environ=ENV)
    one_line_config_error(info, "in-cluster configuration failed", str(account / "ca.crt"))


def test_in_cluster_token_is_sent_and_read_again_once_a_minute_old(account):
    clock = Clock()
    creds = auth.InCluster(clock=clock)
    assert creds.headers() == {"Authorization": "Bearer token-one"}
    assert creds.client_cert() is None
    (account / "token").write_text("token-two")                 # the kubelet rotated it
    clock.now += auth.TOKEN_MAX_AGE - 1
    assert creds.headers() == {"Authorization": "Bearer token-one"}
    clock.now += 1
    assert creds.headers() == {"Authorization": "Bearer token-two"}


def test_in_cluster_refresh_reads_the_token_again_at_once(account):
    creds = auth.InCluster(clock=Clock())
    (account / "token").write_text("token-two")
    assert creds.refresh() is True
    assert creds.headers() == {"Authorization": "Bearer token-two"}


@pytest.mark.parametrize("broken", ["missing", "empty"])
def test_in_cluster_without_a_token(account, broken):
    if broken == "missing":
        (account / "token").unlink()
    else:
        (account / "token").write_text("\n")
    with pytest.raises(ConfigError) as info:
        auth.InCluster()
    one_line_config_error(info, "in-cluster configuration failed", str(account / "token"))


def test_connect_in_a_pod_without_a_kubeconfig(account, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    kube = api.connect(ConnectionOptions())
    assert isinstance(kube, KubeApi)
    assert not hasattr(kube, "request")                  # commands get the calls, not the wire
    conn = kube._transport
    assert conn.server == "https://10.96.0.1:443" and conn.selected.namespace == "gpu-ops"
    assert isinstance(conn.credentials, auth.InCluster)
    assert conn._headers()["Authorization"] == "Bearer token-one"


def test_connect_without_any_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError) as info:
        api.connect(ConnectionOptions())
    one_line_config_error(info, "no kubeconfig found")


# -- auth-provider ----------------------------------------------------------------------------
def selected(user, context="prod"):
    return Selected(context=context, cluster_name="c", user_name="u",
                    cluster={"server": "https://127.0.0.1:1"}, user=user, namespace="default")


@pytest.fixture
def loader(monkeypatch):
    """Stubs the kubernetes modules AuthProvider imports; records each load.  ``behaviour``:
    token (the plugin gives one), nothing, or fail."""

    class Loads(list):
        behaviour = "token"

    loads = Loads()

    class Configuration:
        def __init__(self):
            self.api_key = {}

    class KubeConfigLoader:
        def __init__(self, *, config_dict, active_context):
            self.config, self.context = config_dict, active_context

        def load_and_set(self, target):
            loads.append(self.config)
            if loads.behaviour == "fail":
                raise ValueError("refresh-token secret-xyz rejected")
            if loads.behaviour == "token":
                target.api_key = {"authorization": "Bearer from-plugin"}

    client = types.ModuleType("kubernetes.client")
    client.Configuration = Configuration
    kube_config = types.ModuleType("kubernetes.config.kube_config")
    kube_config.KubeConfigLoader = KubeConfigLoader
    for name, module in (("kubernetes", types.ModuleType("kubernetes")), ("kubernetes.client", client),
                         ("kubernetes.config", types.ModuleType("kubernetes.config")),
                         ("kubernetes.config.kube_config", kube_config)):
        monkeypatch.setitem(sys.modules, name, module)
    return loads


PROVIDER = {"auth-provider": {"name": "oidc", "config": {"id-token": "x"}}}


def test_auth_provider_headers_come_from_the_loader_once(loader):
    creds = auth.credentials_for(selected(dict(PROVIDER)))
    assert isinstance(creds, auth.AuthProvider)
    assert creds.headers() == creds.headers() == {"Authorization": "Bearer from-plugin"}
    assert len(loader) == 1
    users, clusters = loader[0]["users"], loader[0]["clusters"]
    assert users[0]["user"] == PROVIDER and clusters[0]["cluster"]["server"] == "https://127.0.0.1:1"
    assert creds.refresh() is False


def test_auth_provider_without_a_token_sends_no_authorization(loader):
    loader.behaviour = "nothing"
    assert auth.AuthProvider(selected(dict(PROVIDER))).headers() == {}


def test_auth_provider_failure_is_one_line_without_the_loaders_text(loader):
    loader.behaviour = "fail"
    with pytest.raises(ConfigError) as info:
        auth.AuthProvider(selected(dict(PROVIDER))).headers()
    one_line_config_error(info, 'auth-provider of context "prod" failed: ValueError; refresh its login')
    assert "secret-xyz" not in str(info.value)


def test_auth_provider_client_certificate_still_comes_from_the_user(loader, tmp_path):
    user = dict(PROVIDER, **{"client-certificate-data": base64.b64encode(b"CERT").decode(),
                             "client-key-data": base64.b64encode(b"KEY").decode()})
    assert auth.AuthProvider(selected(user)).client_cert() == ("CERT", "KEY", True)


def test_auth_provider_through_the_real_kubernetes_loader_offline():
    """An unexpired OIDC id-token is used as it is: no network, the real lazy import."""
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    token = part({"alg": "RS256"}) + "." + part({"exp": int(time.time()) + 3600}) + ".sig"
    user = {"auth-provider": {"name": "oidc", "config": {
        "id-token": token, "client-id": "c", "idp-issuer-url": "https://127.0.0.1:1"}}}
    assert auth.AuthProvider(selected(user)).headers() == {"Authorization": f"Bearer {token}"}


# -- which kind ---------------------------------------------------------------------------------
def test_credentials_for_each_kind_of_context(account):
    assert isinstance(auth.credentials_for(config.in_cluster(environ=ENV)), auth.InCluster)
    user = auth.credentials_for(selected({"token": "abc"}))
    assert type(user) is auth.KubeconfigUser
    assert user.headers() == {"Authorization": "Bearer abc"}
    with pytest.raises(ConfigError) as info:             # https, no credentials, no terminal
        auth.credentials_for(selected({}))
    assert "has no credentials, and kubectl would ask for a username and password" in str(info.value)
    assert "\n" not in str(info.value) and info.value.exit_code == EXIT_CONFIG
    plain = selected({})
    plain.cluster["server"] = "http://127.0.0.1:8080"    # kubectl asks only for https servers
    assert auth.credentials_for(plain).headers() == {}


def test_no_credentials_on_a_terminal_asks_for_a_username_and_password(monkeypatch, capsys):
    class Terminal:
        def isatty(self):
            return True

        def readline(self):
            return "alice\n"
    monkeypatch.setattr(auth.sys, "stdin", Terminal())
    monkeypatch.setattr(auth.sys, "stderr", type("Err", (), {"isatty": lambda self: True,
                                                             "write": sys.__stderr__.write,
                                                             "flush": lambda self: None})())
    monkeypatch.setattr(auth.getpass, "getpass", lambda prompt: "s3cret")
    user = auth.credentials_for(selected({}))
    expected = base64.b64encode(b"alice:s3cret").decode()
    assert user.headers() == {"Authorization": f"Basic {expected}"}


@pytest.mark.parametrize("as_user, as_groups, user, expected", [
    (None, (), {}, []),
    ("bob", (), {}, [("Impersonate-User", "bob")]),
    (None, (), {"as": "jane", "as-groups": ["a", "b"]},
     [("Impersonate-User", "jane"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b")]),
    ("bob", ("x",), {"as": "jane", "as-groups": ["a"]},
     [("Impersonate-User", "bob"), ("Impersonate-Group", "x")]),
    ("bob", (), {"as-groups": ["a"]}, [("Impersonate-User", "bob"), ("Impersonate-Group", "a")]),
], ids=["none", "flag", "kubeconfig", "flags-win", "flag-user-kubeconfig-groups"])
def test_impersonation(as_user, as_groups, user, expected):
    assert auth.impersonation(as_user, as_groups, user) == expected


def test_an_exec_token_is_reused_until_its_expiration_then_fetched_again(tmp_path, monkeypatch):
    """client-go's rule: an ExecCredential is cached until its expirationTimestamp, then the
    plugin runs again; refresh() (after a 401) forgets it at once.  A real plugin process."""
    runs = tmp_path / "runs"
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(
        "#!/bin/sh\n"
        f'n=$(($(cat "{runs}" 2>/dev/null || echo 0) + 1)); echo "$n" > "{runs}"\n'
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"token-%s","expirationTimestamp":"2030-01-01T00:00:00Z"}}\' "$n"\n')
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                     "interactiveMode": "Never"}}
    creds = auth.KubeconfigUser(user, "ctx", {"server": "https://127.0.0.1:6443"})
    expiry = auth.parse_rfc3339("2030-01-01T00:00:00Z")
    monkeypatch.setattr(auth.time, "time", lambda: expiry - 60)
    assert creds.headers() == {"Authorization": "Bearer token-1"}
    assert creds.headers() == {"Authorization": "Bearer token-1"}        # cached: not expired
    monkeypatch.setattr(auth.time, "time", lambda: expiry + 1)
    assert creds.headers() == {"Authorization": "Bearer token-2"}        # expired: the plugin again
    monkeypatch.setattr(auth.time, "time", lambda: expiry - 60)
    assert creds.refresh() is True                                        # a 401: forget it
    assert creds.headers() == {"Authorization": "Bearer token-3"}
    assert runs.read_text().strip() == "3"


def test_in_cluster_takes_only_the_token_and_ca_flags_as_client_go_does(account, tmp_path):
    from kubectl_gpuisolate.kube import rules
    base = config.in_cluster(environ=ENV)
    same = rules.apply_in_cluster_overrides(base, ConnectionOptions(insecure_skip_tls_verify=True,
                                                                    tls_server_name="x"))
    assert same == base and isinstance(auth.credentials_for(same), auth.InCluster)
    flagged = rules.apply_in_cluster_overrides(base, ConnectionOptions(
        token="flag-token", certificate_authority=str(tmp_path / "other-ca.crt")))
    assert flagged.in_cluster and flagged.cluster["server"] == base.cluster["server"]
    assert flagged.cluster["certificate-authority"] == str(tmp_path / "other-ca.crt")
    assert auth.credentials_for(flagged).headers() == {"Authorization": "Bearer flag-token"}


def test_the_client_certificate_file_read_for_its_dates_is_closed(tmp_path, monkeypatch):
    """_check_cert_dates reads the file named in the kubeconfig and closes it (no leaked handle)."""
    import builtins
    cert = tmp_path / "client.crt"
    cert.write_text("not a certificate\n")
    opened = []
    real_open = builtins.open

    def tracking_open(*args, **kwargs):
        handle = real_open(*args, **kwargs)
        opened.append(handle)
        return handle
    monkeypatch.setattr(builtins, "open", tracking_open)
    auth._check_cert_dates(str(cert), False, "ctx")
    assert [h.name for h in opened] == [str(cert)]
    assert all(h.closed for h in opened)
