"""Who the requests are sent as: credentials, impersonation and the TLS context.

Owns the one ``Credentials`` interface (``headers()``, ``client_cert()``, ``refresh()``) and its
three kinds: ``KubeconfigUser`` (tokens inline, in a tokenFile or from an exec plugin with its
expiry; basic auth; client certificates inline, in files or from exec plugins, with an early
check of their dates), ``AuthProvider`` (legacy auth-provider plugins, delegated to the
``kubernetes`` package, imported only for them) and ``InCluster`` (the pod's service-account
token, re-read as it rotates).  Also impersonation headers and the cluster's certificate
authority.  Nothing here sends a request.  Exec plugins are run by ``exec_plugin``.
"""

import base64
import getpass
import os
import ssl
import sys
import tempfile
import threading
import time

from ..errors import ConfigError
from . import config, exec_plugin

TOKEN_MAX_AGE = 60.0        # seconds; projected service-account tokens rotate (kubelet: hourly)


class Credentials:
    """What every request carries to say who sends it (the interface; no credentials)."""

    context_name = ""

    def headers(self):
        """The Authorization header (or none), read again when it may have changed."""
        return {}

    def client_cert(self):
        """(cert_pem_or_path, key_pem_or_path, is_data) or None."""
        return None

    def refresh(self):
        """After a 401: forget what may have expired.  True when a new try may succeed."""
        return False


def credentials_for(selected):
    """The Credentials of the selected context (``config.Selected``)."""
    if selected.in_cluster and not selected.user.get("token"):
        return InCluster()          # the service account's token, read again as it rotates
    if selected.user.get("auth-provider"):
        return AuthProvider(selected)
    user = selected.user
    if not has_identity(user) and str(selected.cluster.get("server", "")).startswith("https://"):
        user = dict(user, **prompted_basic_auth(selected))
    return KubeconfigUser(user, selected.context, selected.cluster)


def has_identity(user):
    """Whether a kubeconfig user says who it is (client-go's canIdentifyUser)."""
    return any(user.get(k) for k in ("token", "tokenFile", "username", "client-certificate",
                                     "client-certificate-data", "exec", "auth-provider"))


def prompted_basic_auth(selected):
    """kubectl asks for a username and password on the terminal when the user has no
    credentials and the server is https; without a terminal it fails, and so do we."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise ConfigError(
            f'user "{selected.user_name}" of context "{selected.context}" has no credentials, and '
            "kubectl would ask for a username and password on a terminal; add a token, a client "
            "certificate or an exec plugin to that user, or pass --token")
    sys.stderr.write("Please enter Username: ")
    sys.stderr.flush()
    username = sys.stdin.readline().strip()
    return {"username": username, "password": getpass.getpass("Please enter Password: ")}


def impersonation(as_user, as_groups, user, as_uid=None):
    """(header, value) pairs: --as/--as-group/--as-uid, else the kubeconfig user's
    as/as-groups/as-uid and as-user-extra."""
    name = as_user or user.get("as")
    groups = tuple(as_groups or ()) or tuple(user.get("as-groups") or ())
    uid = as_uid or user.get("as-uid")
    pairs = ([("Impersonate-User", name)] if name else []) + [("Impersonate-Group", g) for g in groups]
    pairs += [("Impersonate-Uid", uid)] if uid else []
    for key, values in sorted((user.get("as-user-extra") or {}).items()):
        pairs += [(f"Impersonate-Extra-{key}", v) for v in values or ()]
    return pairs


class KubeconfigUser(Credentials):
    """Authorization headers and client certificates of one kubeconfig user."""

    def __init__(self, user, context_name, cluster=None):
        self.user = user or {}
        self.context_name = context_name
        self.cluster = cluster or {}
        self._exec_cache = None
        self._lock = threading.Lock()

    def refresh(self):
        """Forgets exec credentials so the next request runs the plugin again."""
        with self._lock:
            self._exec_cache = None
        return self.exec_used()

    def exec_used(self):
        """client-go runs the exec plugin only when the user has no token, tokenFile, basic
        auth or client certificate of its own: those win, and the plugin never runs."""
        user = self.user
        own = (user.get("token") or user.get("tokenFile") or user.get("username") or user.get("password")
               or user.get("client-certificate") or user.get("client-certificate-data"))
        return bool(user.get("exec")) and not own

    def exec_status(self):
        with self._lock:
            cached = self._exec_cache
            if cached is None or (cached[1] and cached[1] <= time.time()):
                status = exec_plugin.run(self.user["exec"], self.cluster, self.context_name)
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
        if self.exec_used():
            token = self.exec_status().get("token")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif user.get("username") is not None and user.get("password") is not None:
            raw = f"{user['username']}:{user['password']}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return headers

    def client_cert(self):
        """(cert_pem_or_path, key_pem_or_path, is_data) or None."""
        user = self.user
        if self.exec_used():
            status = self.exec_status()
            if status.get("clientCertificateData") and status.get("clientKeyData"):
                return status["clientCertificateData"], status["clientKeyData"], True
            return None
        # rules.validate has checked the pair; a key without a certificate is unused, as in client-go
        if user.get("client-certificate-data"):
            key = user.get("client-key-data")
            return (b64(user["client-certificate-data"], "client-certificate-data"),
                    b64(key, "client-key-data") if key else _read_text(user["client-key"]), True)
        if user.get("client-certificate"):
            if user.get("client-key-data"):
                return (_read_text(user["client-certificate"]),
                        b64(user["client-key-data"], "client-key-data"), True)
            for key in ("client-certificate", "client-key"):
                if not user.get(key) or not os.path.isfile(user[key]):
                    raise ConfigError(f"{key} file {user.get(key) or '(missing)'} of context "
                                      f'"{self.context_name}" not found; fix the kubeconfig')
            return user["client-certificate"], user["client-key"], False
        return None


def _read_text(path):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


class AuthProvider(KubeconfigUser):
    """A legacy auth-provider plugin (oidc, gcp, azure), run by the ``kubernetes`` package's
    kubeconfig loader once; client certificates still come from the user entry."""

    def __init__(self, selected):
        super().__init__(selected.user, selected.context)
        self._cluster = selected.cluster
        self._headers = None

    def headers(self):
        with self._lock:
            if self._headers is None:
                token = self._load()
                self._headers = {"Authorization": token} if token else {}
            return dict(self._headers)

    def refresh(self):
        return False            # the loader refreshed the token when it ran; a 401 needs a new login

    def _load(self):
        from kubernetes.client import Configuration
        from kubernetes.config.kube_config import KubeConfigLoader

        kubeconfig = {"current-context": "c",
                      "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                      "clusters": [{"name": "c", "cluster": self._cluster}],
                      "users": [{"name": "u", "user": self.user}]}
        target = Configuration()
        try:
            KubeConfigLoader(config_dict=kubeconfig, active_context="c").load_and_set(target)
        except Exception as exc:  # the loader raises many kinds; keep one line
            raise ConfigError(f'auth-provider of context "{self.context_name}" failed: '
                              f"{type(exc).__name__}; refresh its login") from None
        return (target.api_key or {}).get("authorization")


class InCluster(Credentials):
    """The pod's service-account token, read again once it is TOKEN_MAX_AGE old (or after a
    401), because projected tokens are rotated in place."""

    context_name = "in-cluster"

    def __init__(self, directory=None, *, clock=time.monotonic):
        self.path = os.path.join(directory or config.SERVICE_ACCOUNT_DIR, "token")
        self._clock = clock
        self._lock = threading.Lock()
        self._token, self._read_at = self._read(), clock()

    def _read(self):
        try:
            with open(self.path, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise ConfigError(f"in-cluster configuration failed: cannot read the service-account "
                              f"token {self.path} ({exc.strerror}); mount the pod's token") from None
        if not token:
            raise ConfigError(f"in-cluster configuration failed: the service-account token "
                              f"{self.path} is empty")
        return token

    def headers(self):
        with self._lock:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= TOKEN_MAX_AGE:
                self._token, self._read_at = self._read(), now
            return {"Authorization": f"Bearer {self._token}"}

    def refresh(self):
        with self._lock:
            self._read_at = None
        return True


def b64(value, field):
    try:
        return base64.b64decode(value or "", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{field} in kubeconfig is not valid base64") from None


def parse_rfc3339(text):
    """Seconds since the epoch of an RFC 3339 time (an ExecCredential's expirationTimestamp),
    its UTC offset applied; None when it is not one (as Go, a time without a zone is not)."""
    if not text:
        return None
    import calendar
    import re
    match = re.fullmatch(r"(\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d)(?:\.\d+)?([Zz]|[+-]\d\d:\d\d)",
                         text.strip())
    if not match:
        return None
    try:
        seconds = calendar.timegm(time.strptime(match.group(1).upper(), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    zone = match.group(2)
    if zone in "Zz":
        return seconds
    offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
    return seconds - offset if zone[0] == "+" else seconds + offset


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
        if is_data:
            pem = cert_value
        else:
            with open(cert_value, encoding="ascii", errors="replace") as handle:
                pem = handle.read()
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
