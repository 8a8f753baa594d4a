"""kube/config.py: finding, merging and selecting, with real files in tmp_path."""

import os

import pytest
import yaml

from kubectl_gpuisolate.errors import ConfigError
from kubectl_gpuisolate.exits import EXIT_CONFIG
from kubectl_gpuisolate.kube import config as kubeconfig


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


def config(*, current=None, clusters=(), users=(), contexts=()):
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters],
           "users": [{"name": n, "user": u} for n, u in users],
           "contexts": [{"name": n, "context": c} for n, c in contexts]}
    if current is not None:
        doc["current-context"] = current
    return doc


# -- find_paths ------------------------------------------------------------------------------------
def test_find_paths_explicit(tmp_path):
    path = write(tmp_path / "kc", config())
    assert kubeconfig.find_paths(path, environ={"KUBECONFIG": "/elsewhere"}) == [path]


@pytest.mark.parametrize("explicit", ["missing", "adir"], ids=["missing", "directory"])
def test_find_paths_explicit_missing(tmp_path, explicit):
    (tmp_path / "adir").mkdir()
    with pytest.raises(ConfigError) as info:
        kubeconfig.find_paths(str(tmp_path / explicit), environ={})
    assert info.value.exit_code == EXIT_CONFIG
    assert str(tmp_path / explicit) in str(info.value)
    assert "--kubeconfig" in str(info.value)


def test_find_paths_kubeconfig_env(tmp_path):
    a = write(tmp_path / "a", config())
    b = write(tmp_path / "sub" / "b", config())
    missing = str(tmp_path / "missing")
    value = os.pathsep.join([missing, a, "", b, a])
    assert kubeconfig.find_paths(environ={"KUBECONFIG": value}) == [a, b]


def test_find_paths_kubeconfig_env_all_missing_does_not_fall_back(tmp_path, monkeypatch):
    write(tmp_path / "home" / ".kube" / "config", config())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert kubeconfig.find_paths(environ={"KUBECONFIG": str(tmp_path / "nope")}) == []


def test_find_paths_home_fallback(tmp_path, monkeypatch):
    home_config = write(tmp_path / "home" / ".kube" / "config", config())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert kubeconfig.find_paths() == [home_config]
    assert kubeconfig.find_paths(environ={"KUBECONFIG": ""}) == [home_config]


def test_find_paths_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    assert kubeconfig.find_paths(environ={}) == []


# -- merge -----------------------------------------------------------------------------------------
def test_merge_first_file_wins_and_current_context_from_second(tmp_path):
    first = write(tmp_path / "one" / "config", config(
        clusters=[("prod", {"server": "https://first:6443", "certificate-authority": "ca.crt"})],
        users=[("admin", {"client-certificate": "certs/admin.crt",
                          "client-key": "/abs/admin.key", "tokenFile": "../token"})],
        contexts=[("prod", {"cluster": "prod", "user": "admin"})]))
    second = write(tmp_path / "two" / "config", config(
        current="dev",
        clusters=[("prod", {"server": "https://second:6443"}),
                  ("dev", {"server": "https://dev:6443", "certificate-authority": "dev-ca.crt"})],
        users=[("admin", {"token": "second"}), ("dev", {"token": "t"})],
        contexts=[("prod", {"cluster": "dev", "user": "dev"}),
                  ("dev", {"cluster": "dev", "user": "dev", "namespace": "team"})]))
    third = write(tmp_path / "three" / "config", config(current="prod"))
    merged = kubeconfig.merge([first, second, third])
    assert merged.paths == [first, second, third]
    assert merged.current_context == "dev"
    assert merged.clusters["prod"]["server"] == "https://first:6443"
    assert merged.contexts["prod"] == {"cluster": "prod", "user": "admin"}
    assert merged.users["admin"] == {
        "client-certificate": str(tmp_path / "one" / "certs" / "admin.crt"),
        "client-key": "/abs/admin.key",
        "tokenFile": str(tmp_path / "token")}
    assert merged.clusters["prod"]["certificate-authority"] == str(tmp_path / "one" / "ca.crt")
    assert merged.clusters["dev"]["certificate-authority"] == str(tmp_path / "two" / "dev-ca.crt")
    assert sorted(merged.contexts) == ["dev", "prod"]


def test_merge_current_context_first_file_wins(tmp_path):
    a = write(tmp_path / "a", config(current="a-ctx"))
    b = write(tmp_path / "b", config(current="b-ctx"))
    assert kubeconfig.merge([a, b]).current_context == "a-ctx"
    assert kubeconfig.merge([b, a]).current_context == "b-ctx"


def test_merge_exec_command_with_separator_is_relative_to_file(tmp_path):
    path = write(tmp_path / "cfg" / "config", config(users=[
        ("rel", {"exec": {"command": "./bin/get-token", "apiVersion": "v1"}}),
        ("plain", {"exec": {"command": "aws"}}),
    ]))
    merged = kubeconfig.merge([path])
    assert merged.users["rel"]["exec"]["command"] == str(tmp_path / "cfg" / "bin" / "get-token")
    assert merged.users["plain"]["exec"]["command"] == "aws"


def test_merge_empty_file(tmp_path):
    merged = kubeconfig.merge([write(tmp_path / "empty", "")])
    assert (merged.clusters, merged.users, merged.contexts, merged.current_context) == (
        {}, {}, {}, "")


@pytest.mark.parametrize("text, fragments", [
    ("clusters:\n- name: a\n  cluster: {server: x\n", ["is not valid YAML", "at line"]),
    ("apiVersion: v1\nkind: Config\nclusters: [\n", ["is not valid YAML", "at line 4"]),
    ("key: value\n\tbad: tab\n", ["is not valid YAML", "at line 2"]),
    ("- a\n- b\n", ["is not a kubeconfig", "mapping"]),
    ("just a string\n", ["is not a kubeconfig"]),
    ("clusters: {name: a}\n", ["'clusters' must be a list"]),
    ("users:\n- user: {token: t}\n", ["an entry of 'users' has no name"]),
    ("contexts:\n- just-a-string\n", ["an entry of 'contexts' has no name"]),
    (b"current-context: caf\xe9\n", ["is not UTF-8 text"]),
], ids=["unclosed-flow", "unclosed-list", "tab", "top-level-list", "top-level-string",
        "section-not-list", "entry-without-name", "entry-not-mapping", "not-utf-8"])
def test_merge_malformed(tmp_path, text, fragments):
    good = write(tmp_path / "good", config(current="x"))
    bad = write(tmp_path / "bad-config", text)
    with pytest.raises(ConfigError) as info:
        kubeconfig.merge([good, bad])
    message = str(info.value)
    assert bad in message
    assert info.value.exit_code == EXIT_CONFIG
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_merge_reads_yaml_outside_the_fast_subset_with_pyyaml(tmp_path):
    """kube/yamlite.py reads what kubectl writes; anchors, flow mappings and the like are PyYAML's."""
    text = ("clusters:\n- name: a\n  cluster: &c {server: 'https://a:6443'}\n- name: b\n  cluster: *c\n"
            "users:\n- name: u\n  user:\n    token: |-\n      t0k3n\n")
    merged = kubeconfig.merge([write(tmp_path / "config", text)])
    assert merged.clusters["b"] == {"server": "https://a:6443"} and merged.users["u"] == {"token": "t0k3n"}


def test_merge_unreadable(tmp_path):
    with pytest.raises(ConfigError) as info:
        kubeconfig.merge([str(tmp_path)])  # a directory cannot be opened as a file
    assert f"cannot read kubeconfig {tmp_path}" in str(info.value)


# -- select ----------------------------------------------------------------------------------------
@pytest.fixture
def merged(tmp_path):
    path = write(tmp_path / "config", config(
        current="prod",
        clusters=[("prod", {"server": "https://prod:6443"}),
                  ("staging", {"server": "https://staging:6443"}),
                  ("broken", {"certificate-authority-data": "eA=="})],
        users=[("admin", {"token": "a"}), ("viewer", {"token": "v"})],
        contexts=[("prod", {"cluster": "prod", "user": "admin", "namespace": "gpu-ops"}),
                  ("staging", {"cluster": "staging", "user": "viewer"}),
                  ("no-server", {"cluster": "broken", "user": "admin"}),
                  ("ghost-cluster", {"cluster": "ghost", "user": "admin"}),
                  ("ghost-user", {"cluster": "prod", "user": "ghost"}),
                  ("anonymous", {"cluster": "prod"})]))
    return kubeconfig.merge([path])


SELECT_CASES = [
    # (kwargs, context, cluster, user, server, namespace, id)
    ({}, "prod", "prod", "admin", "https://prod:6443", "gpu-ops", "current-context"),
    ({"context": "staging"}, "staging", "staging", "viewer", "https://staging:6443", "default",
     "context-flag-namespace-default"),
    ({"namespace": "other"}, "prod", "prod", "admin", "https://prod:6443", "other",
     "namespace-flag-wins"),
    ({"cluster": "staging"}, "prod", "staging", "admin", "https://staging:6443", "gpu-ops",
     "cluster-override"),
    ({"user": "viewer"}, "prod", "prod", "viewer", "https://prod:6443", "gpu-ops",
     "user-override"),
    ({"context": "staging", "cluster": "prod", "user": "admin", "namespace": "x"}, "staging",
     "prod", "admin", "https://prod:6443", "x", "all-overrides"),
    ({"context": "anonymous"}, "anonymous", "prod", "", "https://prod:6443", "default",
     "no-user"),
]


@pytest.mark.parametrize("kwargs, context, cluster, user, server, namespace",
                         [c[:6] for c in SELECT_CASES], ids=[c[6] for c in SELECT_CASES])
def test_select(merged, kwargs, context, cluster, user, server, namespace):
    selected = kubeconfig.select(merged, **kwargs)
    assert (selected.context, selected.cluster_name, selected.user_name) == (context, cluster, user)
    assert selected.cluster["server"] == server
    assert selected.namespace == namespace
    assert selected.user == merged.users.get(user, {})


@pytest.mark.parametrize("kwargs, fragments", [
    ({"context": "nope"}, ['context "nope" not found',
                           "choose one of: anonymous, ghost-cluster, ghost-user, no-server, "
                           "prod, staging"]),
    ({"context": "no-server"}, ['cluster "broken"', "has no server"]),
    ({"context": "ghost-cluster"}, ['cluster "ghost" of context "ghost-cluster" not found']),
    ({"context": "ghost-user"}, ['user "ghost" of context "ghost-user" not found']),
    ({"cluster": "nope"}, ['cluster "nope" of context "prod" not found']),
    ({"user": "nope"}, ['user "nope" of context "prod" not found']),
], ids=["unknown-context", "missing-server", "unknown-cluster", "unknown-user",
        "cluster-flag-unknown", "user-flag-unknown"])
def test_select_errors(merged, kwargs, fragments):
    with pytest.raises(ConfigError) as info:
        kubeconfig.select(merged, **kwargs)
    assert info.value.exit_code == EXIT_CONFIG
    for fragment in fragments:
        assert fragment in str(info.value)
    assert merged.paths[0] in str(info.value)


def test_select_no_current_context(tmp_path):
    path = write(tmp_path / "config", config(clusters=[("c", {"server": "https://c"})],
                                             users=[("u", {"token": "t"})]))
    merged = kubeconfig.merge([path])
    with pytest.raises(ConfigError) as info:
        kubeconfig.select(merged)
    assert "no current context" in str(info.value) and "--context" in str(info.value)
    selected = kubeconfig.select(merged, cluster="c", user="u")
    assert (selected.context, selected.cluster_name, selected.user_name, selected.namespace) == (
        "", "c", "u", "default")


def test_select_unknown_context_with_no_contexts(tmp_path):
    merged = kubeconfig.merge([write(tmp_path / "config", config())])
    with pytest.raises(ConfigError) as info:
        kubeconfig.select(merged, context="x")
    assert "choose one of: none defined" in str(info.value)


def test_context_names(tmp_path):
    path = write(tmp_path / "config", config(contexts=[("b", {}), ("a", {})]))
    assert kubeconfig.context_names(path) == ["a", "b"]
    assert kubeconfig.context_names(str(tmp_path / "missing")) == []
