"""Credentials of the selected kubeconfig user and the TLS context of its cluster.

Owns: tokens (inline, tokenFile, exec plugins with their expiry), basic auth, client
certificates (inline, files, from exec plugins, with an early check of their dates), the
cluster's certificate authority and the proxy to reach it.  Nothing here sends a request.
"""

import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

from ..errors import ConfigError


class Credentials:
    """Authorization headers and client certificates of one kubeconfig user."""

    def __init__(self, user, context_name):
        self.user = user or {}
        self.context_name = context_name
        self._exec_cache = None
        self._lock = threading.Lock()

    def refresh(self):
        """Forgets exec credentials so the next request runs the plugin again."""
        with self._lock:
            self._exec_cache = None

    def _run_exec(self):
        conf = self.user["exec"]
        command = conf.get("command")
        if not command:
            raise ConfigError(f'exec plugin of context "{self.context_name}" has no command')
        env = dict(os.environ)
        for item in conf.get("env") or ():
            env[item.get("name", "")] = item.get("value", "")
        api_version = conf.get("apiVersion") or "client.authentication.k8s.io/v1"
        env["KUBERNETES_EXEC_INFO"] = json.dumps({
            "apiVersion": api_version, "kind": "ExecCredential",
            "spec": {"interactive": False}})
        try:
            proc = subprocess.run([command] + list(conf.get("args") or ()), env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        except FileNotFoundError:
            hint = (conf.get("installHint") or "").strip().splitlines()
            raise ConfigError(f"exec plugin {command!r} of context \"{self.context_name}\" not found"
                              + (f": {hint[0]}" if hint else "; install it or fix the kubeconfig")) from None
        except subprocess.TimeoutExpired:
            raise ConfigError(f"exec plugin {command!r} did not finish within 60s") from None
        if proc.returncode != 0:
            raise ConfigError(f"exec plugin {command!r} of context \"{self.context_name}\" failed "
                              f"with exit code {proc.returncode}; run it by hand to see why")
        try:
            status = json.loads(proc.stdout).get("status") or {}
        except (ValueError, AttributeError):
            raise ConfigError(f"exec plugin {command!r} printed no ExecCredential JSON") from None
        return status

    def exec_status(self):
        with self._lock:
            cached = self._exec_cache
            if cached is None or (cached[1] and cached[1] <= time.time()):
                status = self._run_exec()
                expiry = parse_rfc3339(status.get("expirationTimestamp"))
                self._exec_cache = cached = (status, expiry)
            return cached[0]

    def headers(self):
        headers = {}
        user = self.user
        token = user.get("token")
        if not token and user.get("tokenFile"):
            try:
                with open(user["tokenFile"], encoding="utf-8") as handle:
                    token = handle.read().strip()
            except OSError as exc:
                raise ConfigError(f"cannot read tokenFile {user['tokenFile']}: {exc.strerror}") from exc
        if user.get("exec"):
            token = self.exec_status().get("token") or token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif user.get("username") is not None and user.get("password") is not None:
            raw = f"{user['username']}:{user['password']}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return headers

    def client_cert(self):
        """(cert_pem_or_path, key_pem_or_path, is_data) or None."""
        user = self.user
        if user.get("exec") and not (user.get("client-certificate") or user.get("client-certificate-data")):
            status = self.exec_status()
            if status.get("clientCertificateData") and status.get("clientKeyData"):
                return status["clientCertificateData"], status["clientKeyData"], True
        if user.get("client-certificate-data") or user.get("client-key-data"):
            return (b64(user.get("client-certificate-data"), "client-certificate-data"),
                    b64(user.get("client-key-data"), "client-key-data"), True)
        if user.get("client-certificate") or user.get("client-key"):
            for key in ("client-certificate", "client-key"):
                if not user.get(key) or not os.path.isfile(user[key]):
                    raise ConfigError(f"{key} file {user.get(key) or '(missing)'} of context "
                                      f'"{self.context_name}" not found; fix the kubeconfig')
            return user["client-certificate"], user["client-key"], False
        return None


def b64(value, field):
    try:
        return base64.b64decode(value or "", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{field} in kubeconfig is not valid base64") from None


def parse_rfc3339(text):
    if not text:
        return None
    import calendar
    try:
        return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def ssl_context(cluster, credentials):
    # As kubectl: a CA named in the kubeconfig is the only one trusted; the system's
    # store is read only when there is none (reading it costs tens of milliseconds).
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        try:
            if cluster.get("certificate-authority-data"):
                context.load_verify_locations(
                    cadata=b64(cluster["certificate-authority-data"], "certificate-authority-data"))
            elif cluster.get("certificate-authority"):
                context.load_verify_locations(cafile=cluster["certificate-authority"])
            else:
                context.load_default_certs()
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load the cluster's certificate authority: {exc}; "
                              "fix certificate-authority in the kubeconfig") from exc
    cert = credentials.client_cert()
    if cert:
        cert_value, key_value, is_data = cert
        _check_cert_dates(cert_value, is_data, credentials.context_name)
        try:
            if is_data:
                with tempfile.TemporaryDirectory(prefix="gpuisolate-") as tmp:
                    cert_path, key_path = os.path.join(tmp, "c"), os.path.join(tmp, "k")
                    for path, value in ((cert_path, cert_value), (key_path, key_value)):
                        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                        with os.fdopen(fd, "w") as handle:
                            handle.write(value)
                    context.load_cert_chain(cert_path, key_path)
            else:
                context.load_cert_chain(cert_value, key_value)
        except (OSError, ssl.SSLError):
            raise ConfigError("cannot load the client certificate and key of the kubeconfig user; "
                              "check that they are a matching PEM pair") from None
    return context


def _check_cert_dates(cert_value, is_data, context_name):
    """An expired client certificate is a kubeconfig problem: say so instead of a bare 401."""
    from .x509 import certificate_dates

    try:
        pem = cert_value if is_data else open(cert_value, encoding="ascii", errors="replace").read()
    except OSError:
        return                     # load_cert_chain reports it
    dates = certificate_dates(pem)
    if not dates:
        return
    now, when = time.time(), "%Y-%m-%d %H:%M UTC"
    if now > dates[1]:
        raise ConfigError(f'the client certificate of context "{context_name}" expired on '
                          f"{time.strftime(when, time.gmtime(dates[1]))}; renew it or get a new "
                          "kubeconfig")
    if now < dates[0]:
        raise ConfigError(f'the client certificate of context "{context_name}" is not valid before '
                          f"{time.strftime(when, time.gmtime(dates[0]))}; check this machine's clock")


def proxy_for(server, cluster):
    if cluster.get("proxy-url"):
        return cluster["proxy-url"]
    if (os.name == "posix" and sys.platform != "darwin"
            and not any(name.lower().endswith("_proxy") for name in os.environ)):
        return None     # no *_proxy variable: all getproxies() reads here (spares its import)
    import urllib.request
    host = urlsplit(server).hostname or ""
    proxies = urllib.request.getproxies()
    if proxies.get("https") and not urllib.request.proxy_bypass(host):
        return proxies["https"]
    return None
