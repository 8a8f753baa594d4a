"""Kubeconfig files: finding, parsing and merging them as kubectl does; or, in a pod, the
in-cluster configuration (``in_cluster``).

Reads files, YAML and environment variables only; never talks to a cluster and never imports
``kubernetes`` or urllib3 (completion uses it to list contexts cheaply).

kubectl's rules: ``--kubeconfig`` names one file that must exist; otherwise
``$KUBECONFIG`` lists files (missing ones are skipped) that are merged so that
the first file to define a name (or ``current-context``) wins; otherwise
``~/.kube/config``.  Relative paths inside a file are relative to that file.
"""

import os
from dataclasses import dataclass, field
from typing import List

from ..errors import ConfigError
from . import yamlite

# The pod's service-account files (token, ca.crt, namespace).  A module constant, not a
# setting: only tests point it elsewhere.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

_PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


@dataclass
class Merged:
    paths: List[str]
    clusters: dict = field(default_factory=dict)
    users: dict = field(default_factory=dict)
    contexts: dict = field(default_factory=dict)
    current_context: str = ""


@dataclass
class Selected:
    """The effective context after flags are applied (``in_cluster``: the pod's service
    account, no kubeconfig)."""

    context: str
    cluster_name: str
    user_name: str
    cluster: dict
    user: dict
    namespace: str
    in_cluster: bool = False


def find_paths(explicit=None, environ=None):
    """The kubeconfig files to read, in precedence order."""
    environ = os.environ if environ is None else environ
    if explicit:
        if not _is_file(explicit):
            raise ConfigError(f"kubeconfig file {explicit} not found; check --kubeconfig")
        return [explicit]
    if environ.get("KUBECONFIG"):
        paths = [p for p in environ["KUBECONFIG"].split(os.pathsep) if p]
        return [p for p in dict.fromkeys(paths) if _is_file(p)]
    home = os.path.join(os.path.expanduser("~"), ".kube", "config")
    return [home] if os.path.isfile(home) else []


def _is_file(path):
    """A file kubectl would read: anything that exists and is not a directory (/dev/null too)."""
    return os.path.exists(path) and not os.path.isdir(path)


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"kubeconfig {path} is not UTF-8 text; fix or remove it") from exc
    # The YAML kubectl writes is read without PyYAML (kube.yamlite: its import is ~10 ms of a
    # status); anything else, and every error, is PyYAML's.
    data = yamlite.load(text)
    return _read_yaml(path, text) if data is None else data


def _read_yaml(path, text):
    import yaml  # PyYAML; only kubernetes is kept off the fast paths

    try:
        # libyaml's loader when PyYAML has it: the same documents, parsed many times faster
        # (kubeconfigs carry kilobytes of base64 certificates).
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"kubeconfig {path} is not valid YAML{where}; fix or remove it") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig (expected a mapping at the top)")
    return data


def _absolutize(entry, keys, base):
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            entry[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    exec_conf = entry.get("exec")
    if isinstance(exec_conf, dict):
        command = exec_conf.get("command")
        # kubectl resolves a command with a path separator relative to the file.
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            exec_conf["command"] = os.path.normpath(os.path.join(base, command))


def merge(paths):
    """Reads and merges the files; the first definition of each name wins."""
    merged = Merged(paths=list(paths))
    for path in paths:
        data = _read(path)
        base = os.path.dirname(os.path.abspath(path))
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            entries = data.get(section) or []
            if not isinstance(entries, list):
                raise ConfigError(f"kubeconfig {path}: '{section}' must be a list")
            target = getattr(merged, section)
            for item in entries:
                if not isinstance(item, dict) or not item.get("name"):
                    raise ConfigError(f"kubeconfig {path}: an entry of '{section}' has no name")
                if item["name"] in target:
                    continue
                body = item.get(inner) or {}
                if not isinstance(body, dict):
                    raise ConfigError(f'kubeconfig {path}: the {inner} of {section} entry "{item["name"]}" '
                                      "must be a mapping")
                body = dict(body)
                for key in ("exec", "auth-provider"):
                    if section == "users" and not isinstance(body.get(key) or {}, dict):
                        raise ConfigError(f'kubeconfig {path}: {key} of user "{item["name"]}" must be '
                                          "a mapping (see 'kubectl config set-credentials --help')")
                _absolutize(body, _PATH_FIELDS.get(section, ()), base)
                target[item["name"]] = body
        if not merged.current_context and data.get("current-context"):
            merged.current_context = str(data["current-context"])
    return merged


def select(merged, *, context=None, cluster=None, user=None, namespace=None, server=None):
    """Applies --context/--cluster/--user/--namespace to the merged config; with ``server``
    (--server), a context or cluster is not needed, as in kubectl."""
    where = ", ".join(merged.paths) or "(none)"
    name = context or merged.current_context
    if not name:
        if not (cluster and user) and not server:
            raise ConfigError(f"no current context in kubeconfig {where}; pass --context "
                              "(or run 'kubectl config use-context NAME')")
        ctx = {}
    elif name not in merged.contexts:
        choices = ", ".join(sorted(merged.contexts)) or "none defined"
        raise ConfigError(f'context "{name}" not found in kubeconfig {where}; choose one of: {choices}')
    else:
        ctx = merged.contexts[name]
    cluster_name = cluster or ctx.get("cluster", "")
    user_name = user if user is not None else ctx.get("user", "")
    if cluster_name not in merged.clusters and not (server and not cluster):
        raise ConfigError(f'cluster "{cluster_name}" of context "{name}" not found in kubeconfig {where}')
    if user_name and user_name not in merged.users:
        raise ConfigError(f'user "{user_name}" of context "{name}" not found in kubeconfig {where}')
    cluster_conf = merged.clusters.get(cluster_name, {})
    if not cluster_conf.get("server") and not server:
        raise ConfigError(f'cluster "{cluster_name}" in kubeconfig {where} has no server')
    return Selected(context=name or "", cluster_name=cluster_name, user_name=user_name,
                    cluster=cluster_conf, user=merged.users.get(user_name, {}),
                    namespace=namespace or ctx.get("namespace") or "default")


def in_cluster(namespace=None, environ=None):
    """The Selected of the pod's service account, as client-go's InClusterConfig: the server
    from KUBERNETES_SERVICE_HOST/PORT, the CA and namespace from SERVICE_ACCOUNT_DIR (the token
    is the credentials' business: ``auth.InCluster``)."""
    environ = os.environ if environ is None else environ
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError("in-cluster configuration failed: KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT must both be set")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"                  # an IPv6 address
    ca = os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt")
    if not os.path.isfile(ca) or not os.path.getsize(ca):
        raise ConfigError(f"in-cluster configuration failed: the service-account CA {ca} is "
                          "missing or empty; mount the pod's service-account token")
    if not namespace:
        try:
            with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace"), encoding="utf-8") as handle:
                namespace = handle.read().strip()
        except OSError:
            pass                            # optional, as in client-go
    return Selected(context="in-cluster", cluster_name="in-cluster", user_name="",
                    cluster={"server": f"https://{host}:{port}", "certificate-authority": ca},
                    user={}, namespace=namespace or "default", in_cluster=True)


def context_names(explicit=None):
    """Context names for completion; empty on any problem."""
    try:
        return sorted(merge(find_paths(explicit)).contexts)
    except ConfigError:
        return []
