"""Exec credential plugins, run as client-go runs them.

The environment is ours plus the kubeconfig's ``env``, and ``KUBERNETES_EXEC_INFO``: an
ExecCredential of the configured apiVersion whose spec says whether the plugin may talk to the
user (``interactive``) and, with ``provideClusterInfo: true``, the cluster (server, CA data,
tls-server-name, insecure flag, proxy-url, and the cluster's extension named
``client.authentication.k8s.io/exec`` as ``config``).  Standard input is handed over only
when it is a terminal and interactiveMode is not Never; Always without a terminal is an error.
The answer must be an ExecCredential of the same apiVersion with a token or a cert/key pair.
Not interactive, the plugin's stderr is kept (plugins echo secrets there); interactive, it
is the user's (prompts).
"""

import base64
import json
import os
import subprocess
import sys

from ..errors import ConfigError
from .rules import interactive_mode

TIMEOUT = 60.0                  # seconds a plugin may take
EXTENSION = "client.authentication.k8s.io/exec"


def _stdin_is_terminal():
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return False


def cluster_info(cluster):
    """spec.cluster of KUBERNETES_EXEC_INFO (client-go's ConfigToExecCluster)."""
    info = {"server": cluster.get("server", "")}
    ca_data = cluster.get("certificate-authority-data")
    if not ca_data and cluster.get("certificate-authority"):
        try:
            with open(cluster["certificate-authority"], "rb") as handle:
                ca_data = base64.b64encode(handle.read()).decode()
        except OSError as exc:
            raise ConfigError(f"cannot read certificate-authority {cluster['certificate-authority']} "
                              f"for the exec plugin: {exc.strerror}") from None
    for key, value in (("tls-server-name", cluster.get("tls-server-name")),
                       ("insecure-skip-tls-verify", bool(cluster.get("insecure-skip-tls-verify"))),
                       ("certificate-authority-data", ca_data),
                       ("proxy-url", cluster.get("proxy-url")),
                       ("disable-compression", bool(cluster.get("disable-compression")))):
        if value:
            info[key] = value
    for item in cluster.get("extensions") or ():
        if isinstance(item, dict) and item.get("name") == EXTENSION:
            info["config"] = item.get("extension")
    return info


def exec_info(conf, cluster, interactive):
    spec = {"interactive": interactive}
    if conf.get("provideClusterInfo"):
        spec["cluster"] = cluster_info(cluster)
    return {"apiVersion": conf["apiVersion"], "kind": "ExecCredential", "spec": spec}


def _interactive(conf):
    mode = interactive_mode(conf)
    terminal = _stdin_is_terminal()
    if mode == "Always" and not terminal:
        raise ConfigError("getting credentials: exec plugin cannot support interactive mode: "
                          "standard input is not a terminal")
    return terminal and mode != "Never"


def run(conf, cluster, context_name):
    """The ``status`` of the plugin's ExecCredential (token and/or client cert and key)."""
    command = conf.get("command")
    interactive = _interactive(conf)
    env = dict(os.environ)
    for item in conf.get("env") or ():
        env[item.get("name", "")] = item.get("value", "")
    env["KUBERNETES_EXEC_INFO"] = json.dumps(exec_info(conf, cluster, interactive))
    try:
        proc = subprocess.run([command] + list(conf.get("args") or ()), env=env,
                              stdin=sys.stdin if interactive else subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=None if interactive else subprocess.PIPE, timeout=TIMEOUT)
    except (FileNotFoundError, PermissionError) as exc:
        hint = " ".join((conf.get("installHint") or "").split())
        what = "not found" if isinstance(exc, FileNotFoundError) else "not executable"
        raise ConfigError(f"exec plugin {command!r} of context \"{context_name}\" {what}"
                          + (f": {hint}" if hint else "; install it or fix the kubeconfig")) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"exec plugin {command!r} did not finish within {TIMEOUT:.0f}s") from None
    if proc.returncode != 0:
        raise ConfigError(f"exec plugin {command!r} of context \"{context_name}\" failed "
                          f"with exit code {proc.returncode}; run it by hand to see why")
    return _status(proc.stdout, conf, command)


def _status(stdout, conf, command):
    try:
        credential = json.loads(stdout)
    except ValueError:
        credential = None
    if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
        raise ConfigError(f"exec plugin {command!r} printed no ExecCredential JSON")
    if credential.get("apiVersion") != conf["apiVersion"]:
        raise ConfigError(f"getting credentials: exec plugin is configured to use API version "
                          f"{conf['apiVersion']}, plugin returned version "
                          f"{credential.get('apiVersion') or '(none)'}")
    status = credential.get("status")
    if not isinstance(status, dict):
        raise ConfigError("getting credentials: exec plugin didn't return a status field")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not (status.get("token") or cert or key):
        raise ConfigError("getting credentials: exec plugin didn't return a token or cert/key pair")
    if bool(cert) != bool(key):
        raise ConfigError("getting credentials: exec plugin returned only certificate or key, not both")
    return status
