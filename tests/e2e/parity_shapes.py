"""The kubeconfig, flag and environment shapes of the kubectl parity suite
(test_kubectl_parity.py), and the little servers they need: a counting CONNECT proxy that maps
every host to 127.0.0.1, and the writers of generated exec plugins (the exec shapes: parity_exec.py).

A shape is ``fn(m, tmp) -> (flags, env)``: the global flags to give both kubectl and the
plugin, and environment variables to set (``KUBECONFIG`` among them); ``m`` is the suite's
material (the sandbox's server, CA, token, admin certificate, the proxy).
"""

import base64
import json
import os
import select
import socket
import socketserver
import threading
from pathlib import Path

V1, V1BETA1 = "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"


class ConnectProxy(socketserver.ThreadingTCPServer):
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels HOST:PORT to 127.0.0.1:PORT and records
    each HOST:PORT it was asked for (``hosts``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.hosts = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Tunnel(socketserver.BaseRequestHandler):
    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(line) < 2 or line[0] != "CONNECT":
            self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        self.server.hosts.append(line[1])
        port = int(line[1].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as upstream:
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(self.request, upstream)


def _pipe(a, b):
    sockets = [a, b]
    while True:
        ready, _, _ = select.select(sockets, [], [], 30)
        if not ready:
            return
        for s in ready:
            data = s.recv(65536)
            if not data:
                return
            (b if s is a else a).sendall(data)


def write_config(path, clusters, users, contexts, current=None):
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
           "users": [{"name": n, "user": u} for n, u in users.items()],
           "contexts": [{"name": n, "context": c} for n, c in contexts.items()]}
    if current is not None:
        doc["current-context"] = current
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1))
    return str(path)


def one(tmp, m, user, cluster=None, name="kc"):
    """A kubeconfig with one context: the sandbox cluster (or ``cluster``) and ``user``."""
    cluster = {"server": m["server"], "certificate-authority": m["ca"]} if cluster is None else cluster
    return write_config(tmp / name, {"c": cluster}, {"u": user}, {"x": {"cluster": "c", "user": "u"}}, "x")


def plugin(tmp, name, body):
    """An executable shell script in tmp (an exec credential plugin)."""
    path = tmp / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def credential(api_version, **status):
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})


def token_plugin(tmp, m, api_version=V1, check="true"):
    return plugin(tmp, "cred", f"{check} || exit 7\necho '{credential(api_version, token=m['token'])}'\n")


def kc(path):
    return {"KUBECONFIG": str(path)}


def sandbox_default(m, tmp):
    return [], kc(m["kubeconfig"])


def cert_data(m, tmp):
    user = {"client-certificate-data": m["crt_b64"], "client-key-data": m["key_b64"]}
    return [], kc(one(tmp, m, user))


def token_inline(m, tmp):
    return [], kc(one(tmp, m, {"token": m["token"]}))


def token_file(m, tmp):
    (tmp / "tok").write_text(m["token"] + "\n")
    return [], kc(one(tmp, m, {"tokenFile": str(tmp / "tok")}))


def relative_paths(m, tmp):
    sub = tmp / "conf"
    sub.mkdir()
    (sub / "tok").write_text(m["token"])
    (sub / "ca.crt").write_bytes(Path(m["ca"]).read_bytes())
    path = one(sub, m, {"tokenFile": "tok"}, {"server": m["server"], "certificate-authority": "ca.crt"})
    return [], kc(os.path.relpath(path))


def relative_cert_files(m, tmp):
    sub = tmp / "conf"
    sub.mkdir()
    for name in ("crt", "key"):
        (sub / f"admin.{name}").write_bytes(Path(m[name]).read_bytes())
    return [], kc(one(sub, m, {"client-certificate": "admin.crt", "client-key": "./admin.key"}))


def merged_current_from_first(m, tmp):
    first = write_config(tmp / "a", {}, {}, {}, current="x")
    second = one(tmp, m, {"token": m["token"]}, name="b")
    return [], kc(os.pathsep.join([first, second]))


def merged_first_user_wins(m, tmp):
    first = write_config(tmp / "a", {}, {"u": {"token": m["token"]}}, {})
    second = one(tmp, m, {"token": "wrong-token"}, name="b")
    return [], kc(os.pathsep.join([first, second]))


def merged_first_bad_user_wins(m, tmp):
    first = write_config(tmp / "a", {}, {"u": {"token": "wrong-token"}}, {})
    second = one(tmp, m, {"token": m["token"]}, name="b")
    return [], kc(os.pathsep.join([first, second]))


def same_file_twice(m, tmp):
    path = one(tmp, m, {"token": m["token"]})
    return [], kc(os.pathsep.join([path, path]))


def missing_file_skipped(m, tmp):
    return [], kc(os.pathsep.join([str(tmp / "nope"), one(tmp, m, {"token": m["token"]})]))


def empty_file(m, tmp):
    (tmp / "empty").write_text("")
    return [], kc(tmp / "empty")


def empty_file_merged(m, tmp):
    (tmp / "empty").write_text("")
    return [], kc(os.pathsep.join([str(tmp / "empty"), one(tmp, m, {"token": m["token"]})]))


def two_contexts(m, tmp, pick):
    cluster = {"server": m["server"], "certificate-authority": m["ca"]}
    path = write_config(tmp / "kc", {"c": cluster}, {"good": {"token": m["token"]}, "bad": {"token": "no"}},
                        {"good": {"cluster": "c", "user": "good"}, "bad": {"cluster": "c", "user": "bad"}},
                        "bad")
    return pick, kc(path)


def context_flag(m, tmp):
    return two_contexts(m, tmp, ["--context", "good"])


def user_flag(m, tmp):
    return two_contexts(m, tmp, ["--user", "good"])


def unknown_context(m, tmp):
    return two_contexts(m, tmp, ["--context", "nope"])


def no_current_context(m, tmp):
    cluster = {"server": m["server"], "certificate-authority": m["ca"]}
    return [], kc(write_config(tmp / "kc", {"c": cluster}, {"u": {"token": m["token"]}},
                               {"x": {"cluster": "c", "user": "u"}}))


def cluster_flag(m, tmp):
    clusters = {"bad": {"server": m["closed"]},
                "good": {"server": m["server"], "certificate-authority": m["ca"]}}
    path = write_config(tmp / "kc", clusters, {"u": {"token": m["token"]}},
                        {"x": {"cluster": "bad", "user": "u"}}, "x")
    return ["--cluster", "good"], kc(path)


def kubeconfig_flag_over_env(m, tmp):
    (tmp / "bad").write_text("clusters: [\n")
    return ["--kubeconfig", one(tmp, m, {"token": m["token"]})], kc(tmp / "bad")


def kubeconfig_flag_missing(m, tmp):
    return ["--kubeconfig", str(tmp / "nope")], kc(one(tmp, m, {"token": m["token"]}))


def token_file_missing(m, tmp):
    return [], kc(one(tmp, m, {"tokenFile": str(tmp / "nope")}))


def anonymous(m, tmp):
    return [], kc(one(tmp, m, {}))


def ca_twice(m, tmp):
    cluster = {"server": m["server"], "certificate-authority": m["ca"],
               "certificate-authority-data": m["ca_b64"]}
    return [], kc(one(tmp, m, {"token": m["token"]}, cluster))


def ca_data(m, tmp):
    cluster = {"server": m["server"], "certificate-authority-data": m["ca_b64"]}
    return [], kc(one(tmp, m, {"token": m["token"]}, cluster))


def no_ca(m, tmp):
    return [], kc(one(tmp, m, {"token": m["token"]}, {"server": m["server"]}))


def insecure_file(m, tmp):
    cluster = {"server": m["server"], "insecure-skip-tls-verify": True}
    return [], kc(one(tmp, m, {"token": m["token"]}, cluster))


def insecure_and_ca_file(m, tmp):
    cluster = {"server": m["server"], "insecure-skip-tls-verify": True, "certificate-authority": m["ca"]}
    return [], kc(one(tmp, m, {"token": m["token"]}, cluster))


def tls_server_name(value):
    def shape(m, tmp):
        cluster = {"server": m["server_named"], "certificate-authority": m["ca"], "tls-server-name": value}
        return [], dict(kc(one(tmp, m, {"token": m["token"]}, cluster)), HTTPS_PROXY=m["proxy"])
    return shape


def cert_data_and_file(m, tmp):
    user = {"client-certificate": m["crt"], "client-certificate-data": m["crt_b64"], "client-key": m["key"]}
    return [], kc(one(tmp, m, user))


def key_data_and_file(m, tmp):
    user = {"client-certificate": m["crt"], "client-key": m["key"], "client-key-data": m["key_b64"]}
    return [], kc(one(tmp, m, user))


def cert_without_key(m, tmp):
    return [], kc(one(tmp, m, {"client-certificate": m["crt"]}))


def key_without_cert(m, tmp):
    return [], kc(one(tmp, m, {"client-key": m["key"], "token": m["token"]}))


def impersonation_file(m, tmp):
    return [], kc(one(tmp, m, {"token": m["token"], "as": "jane", "as-groups": ["system:masters"]}))


def impersonation_file_unprivileged(m, tmp):
    return [], kc(one(tmp, m, {"token": m["token"], "as": "gpuisolate-e2e-nobody"}))


def with_token(flags):
    def shape(m, tmp):
        return [f.format(**m) for f in flags], kc(one(tmp, m, {"token": m["token"]}))
    return shape


def flags_only(flags):
    """Flags and a kubeconfig that holds nothing: all comes from the flags."""
    def shape(m, tmp):
        (tmp / "empty").write_text("")
        return [f.format(**m) for f in flags], kc(tmp / "empty")
    return shape


def file_token_overridden(m, tmp):
    return ["--token", m["token"]], kc(one(tmp, m, {"token": "wrong-token"}))


def cert_flags(m, tmp):
    return ["--client-certificate", m["crt"], "--client-key", m["key"]], kc(one(tmp, m, {}))


def proxied(env_name, server_key="server", no_proxy=None, cluster_extra=None):
    def shape(m, tmp):
        cluster = {"server": m[server_key], "certificate-authority": m["ca"], **(cluster_extra or {})}
        if server_key != "server":
            cluster["tls-server-name"] = "localhost"
        env = kc(one(tmp, m, {"token": m["token"]}, cluster))
        if env_name:
            env[env_name] = m["proxy"]
        if no_proxy is not None:
            env["NO_PROXY"] = no_proxy.format(**m)
        return ["--request-timeout", "5s"], env
    return shape


def proxy_url(m, tmp):
    cluster = {"server": m["server_named"], "certificate-authority": m["ca"], "proxy-url": m["proxy"],
               "tls-server-name": "localhost"}
    return [], dict(kc(one(tmp, m, {"token": m["token"]}, cluster)), NO_PROXY="*")


def proxy_url_closed(m, tmp):
    cluster = {"server": m["server"], "certificate-authority": m["ca"], "proxy-url": m["closed"]}
    return [], kc(one(tmp, m, {"token": m["token"]}, cluster))


def b64(path):
    return base64.b64encode(Path(path).read_bytes()).decode()
