"""The only module that talks to the API server.

It owns: turning the selected kubeconfig context into a TLS connection and
credentials, JSON requests with bounded retries for safe calls, paginated
lists, resourceVersion-guarded node patches, evictions and watches.  Objects
stay plain JSON dicts: decoding tens of thousands of pods into client model
objects is what makes Python tools slow at scale.

The ``kubernetes`` package is imported lazily, only for what it does better
than a few lines here: legacy ``auth-provider`` plugins and the in-cluster
service-account configuration.  Everything else (client certificates, tokens,
basic auth, exec plugins, impersonation with several groups) is handled here
so that a plain ``status`` does not pay the client's import cost.
"""

import base64
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlencode, urlsplit

from . import __version__
from .errors import (ApiError, AuthError, ConfigError, ConflictError, ConnectionFailed,
                     NotFound)
from .flags import DryRun

USER_AGENT = f"kubectl-gpuisolate/{__version__}"
LIST_CHUNK = 500
_RETRYABLE = {429, 500, 502, 503, 504}


class Response:
    __slots__ = ("status", "headers", "data")

    def __init__(self, status, headers, data):
        self.status, self.headers, self.data = status, headers, data

    def json(self):
        return json.loads(self.data) if self.data else {}


def _status_error(response, what):
    """Translates a non-2xx response into the matching error."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}      # e.g. a proxy's "null" or "[]"
    message = body.get("message") or response.data.decode("utf-8", "replace").strip()[:200] \
        or f"HTTP {response.status}"
    details = body.get("details") if isinstance(body.get("details"), dict) else {}
    causes = [c for c in details.get("causes") or () if isinstance(c, dict)]
    retry_after = None
    header = response.headers.get("Retry-After")
    seconds = details.get("retryAfterSeconds")
    if header and header.isdigit():
        retry_after = int(header)
    elif isinstance(seconds, int) and seconds > 0:
        retry_after = seconds
    kwargs = dict(status=response.status, reason=body.get("reason", ""), causes=causes,
                  retry_after=retry_after)
    if response.status == 401:
        err = ApiError(f"Unauthorized: the server rejected the credentials while {what}; "
                       "refresh the credentials of this kubeconfig user", exit_code=AuthError.exit_code,
                       **kwargs)
    elif response.status == 403 and not any(c.get("reason") == "NamespaceTerminating" for c in causes):
        err = ApiError(f"{message} (while {what}; grant that permission or use another context)",
                       exit_code=AuthError.exit_code, **kwargs)
    elif response.status == 404:
        err = ApiError(message, exit_code=NotFound.exit_code, **kwargs)
    elif response.status == 409:
        err = ApiError(message, exit_code=ConflictError.exit_code, **kwargs)
    else:
        err = ApiError(f"{message} (HTTP {response.status} while {what})", **kwargs)
    return err


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
                expiry = _parse_rfc3339(status.get("expirationTimestamp"))
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
            return (_b64(user.get("client-certificate-data"), "client-certificate-data"),
                    _b64(user.get("client-key-data"), "client-key-data"), True)
        if user.get("client-certificate") or user.get("client-key"):
            for key in ("client-certificate", "client-key"):
                if not user.get(key) or not os.path.isfile(user[key]):
                    raise ConfigError(f"{key} file {user.get(key) or '(missing)'} of context "
                                      f'"{self.context_name}" not found; fix the kubeconfig')
            return user["client-certificate"], user["client-key"], False
        return None


def _b64(value, field):
    try:
        return base64.b64decode(value or "", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{field} in kubeconfig is not valid base64") from None


def _parse_rfc3339(text):
    if not text:
        return None
    import calendar
    try:
        return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def _ssl_context(cluster, credentials):
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
                    cadata=_b64(cluster["certificate-authority-data"], "certificate-authority-data"))
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
    from .kubeconfig import certificate_dates

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


def _proxy_for(server, cluster):
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


class Kube:
    """A connection to one API server, with the user's credentials."""

    def __init__(self, selected, options, *, pool_size=10):
        self.selected = selected
        self.options = options
        self.server = selected.cluster["server"].rstrip("/")
        self.namespace = selected.namespace
        self.credentials = Credentials(selected.user, selected.context)
        self._auth_provider_headers = None
        self._pool = self._make_pool(pool_size)

    # -- connection ------------------------------------------------------------------------------
    def _make_pool(self, pool_size):
        import urllib3

        url = urlsplit(self.server)
        if url.scheme not in ("https", "http"):
            raise ConfigError(f"server {self.server} must start with https:// or http://")
        timeout = self.options.request_timeout or None
        self._timeout = urllib3.Timeout(connect=min(timeout or 30, 30), read=timeout)
        proxy = _proxy_for(self.server, self.selected.cluster)
        kwargs = dict(maxsize=pool_size, block=True, retries=False, timeout=self._timeout)
        if url.scheme == "https":
            kwargs["ssl_context"] = _ssl_context(self.selected.cluster, self.credentials)
            if self.selected.cluster.get("tls-server-name"):
                kwargs["server_hostname"] = self.selected.cluster["tls-server-name"]
                kwargs["assert_hostname"] = self.selected.cluster["tls-server-name"]
        if proxy:
            if not proxy.startswith(("http://", "https://")):
                raise ConfigError(f"proxy {proxy} is not supported; use an http(s) proxy")
            return urllib3.ProxyManager(proxy, num_pools=1, **kwargs)
        return urllib3.PoolManager(num_pools=1, **kwargs)

    def _headers(self, content_type=None):
        from urllib3 import HTTPHeaderDict

        headers = HTTPHeaderDict({"User-Agent": USER_AGENT, "Accept": "application/json"})
        if content_type:
            headers["Content-Type"] = content_type
        user = self.selected.user
        if user.get("auth-provider"):
            headers.update(self._auth_provider())
        elif self.selected.user_name or user:
            headers.update(self.credentials.headers())
        else:
            headers.update(self._in_cluster_headers())
        as_user = self.options.as_user or user.get("as")
        groups = self.options.as_groups or tuple(user.get("as-groups") or ())
        if as_user:
            headers["Impersonate-User"] = as_user
        for group in groups:
            headers.add("Impersonate-Group", group)
        return headers

    def _auth_provider(self):
        """Legacy auth-provider plugins (oidc, gcp, azure): delegated to kubernetes."""
        if self._auth_provider_headers is None:
            from kubernetes.client import Configuration
            from kubernetes.config.kube_config import KubeConfigLoader

            sel = self.selected
            config = {"current-context": "c",
                      "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                      "clusters": [{"name": "c", "cluster": sel.cluster}],
                      "users": [{"name": "u", "user": sel.user}]}
            target = Configuration()
            try:
                KubeConfigLoader(config_dict=config, active_context="c").load_and_set(target)
            except Exception as exc:  # the loader raises many kinds; keep one line
                raise ConfigError(f'auth-provider of context "{sel.context}" failed: '
                                  f"{type(exc).__name__}; refresh its login") from None
            token = (target.api_key or {}).get("authorization")
            self._auth_provider_headers = {"Authorization": token} if token else {}
        return self._auth_provider_headers

    def _in_cluster_headers(self):
        return dict(getattr(self, "_in_cluster_auth", {}))

    # -- requests -------------------------------------------------------------------------------
    def request(self, method, path, *, params=None, body=None, content_type=None,
                what="calling the API", retry=None, timeout=None, stream=False):
        """Sends one request; returns the Response for 2xx, raises otherwise.

        ``retry`` (default: for GET) retries throttling, 5xx and dropped
        connections a few times with backoff, honouring Retry-After.
        """
        import urllib3

        retry = (method == "GET") if retry is None else retry
        url = self.server + path + ("?" + urlencode(params, doseq=True) if params else "")
        data = json.dumps(body).encode() if body is not None else None
        attempts = 5 if retry else 1
        delay = 0.2
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                raw = self._pool.request(method, url, body=data,
                                         headers=self._headers(content_type if data else None),
                                         timeout=timeout or self._timeout,
                                         preload_content=not stream, redirect=False)
            except urllib3.exceptions.SSLError as exc:
                raise ConnectionFailed(f"TLS verification of {self.server} failed ({_short(exc)}); "
                                       "check certificate-authority in the kubeconfig") from None
            except urllib3.exceptions.NewConnectionError as exc:
                # Checked first: urllib3 2 makes it a subclass of the timeout errors.
                if last:
                    raise ConnectionFailed(f"cannot reach the API server {self.server} while {what} "
                                           f"({_short(exc)}); check --context or that the cluster "
                                           "is up") from None
            except (urllib3.exceptions.TimeoutError, urllib3.exceptions.ReadTimeoutError):
                if last:
                    raise ConnectionFailed(
                        f"the API server {self.server} did not answer in time while {what}; "
                        "raise --request-timeout or check the server") from None
            except urllib3.exceptions.HTTPError as exc:
                if last:
                    raise ConnectionFailed(f"cannot reach the API server {self.server} while {what} "
                                           f"({_short(exc)}); check --context or that the cluster "
                                           "is up") from None
            else:
                if stream and 200 <= raw.status < 300:
                    return raw
                response = Response(raw.status, raw.headers, raw.data)
                if 200 <= raw.status < 300:
                    return response
                if raw.status == 401 and self.selected.user.get("exec") and attempt == 0:
                    self.credentials.refresh()
                    continue
                if last or raw.status not in _RETRYABLE:
                    raise _status_error(response, what)
                retry_after = _status_error(response, what).retry_after
                if retry_after:
                    delay = max(delay, min(retry_after, 10))
            time.sleep(delay * (0.75 + random.random() / 2))
            delay = min(delay * 2, 5)
        raise AssertionError("unreachable")

    def get(self, path, params=None, *, what):
        return self.request("GET", path, params=params, what=what).json()

    def list_all(self, path, params=None, *, what):
        """Lists every item, page by page (limit/continue)."""
        params = dict(params or {}, limit=LIST_CHUNK)
        items = []
        while True:
            page = self.get(path, params, what=what)
            items.extend(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, (page.get("metadata") or {}).get("resourceVersion", "")
            params["continue"] = token
            # The token carries the snapshot; the server refuses a resourceVersion beside it.
            params.pop("resourceVersion", None)
            params.pop("resourceVersionMatch", None)

    # -- nodes ---------------------------------------------------------------------------------
    def list_nodes(self, selector=None):
        return self.list_nodes_with_version(selector)[0]

    def list_nodes_with_version(self, selector=None):
        """(nodes, resourceVersion of the list): a consistent read, as kubectl's."""
        params = {"labelSelector": selector} if selector else {}
        return self.list_all("/api/v1/nodes", params, what="listing nodes")

    def get_node(self, name):
        try:
            return self.get(f"/api/v1/nodes/{name}", what=f"reading node {name}")
        except ApiError as exc:
            if exc.status == 404:
                raise NotFound(f'node "{name}" not found; check the name with '
                               "'kubectl get nodes'") from None
            raise

    def patch_node(self, node, patch, *, dry_run, retry=True):
        """A JSON merge patch; a resourceVersion in the patch makes it conditional."""
        name = node["metadata"]["name"]
        if dry_run is DryRun.CLIENT:
            return _merge(node, patch)
        params = {"dryRun": "All"} if dry_run is DryRun.SERVER else None
        return self.request("PATCH", f"/api/v1/nodes/{name}", params=params, body=patch,
                            content_type="application/merge-patch+json", retry=retry,
                            what=f"patching node {name}").json()

    def update_node_taints(self, name, compute, *, dry_run, attempts=8):
        """Re-reads the node and writes ``compute(taints)`` guarded by resourceVersion.

        ``compute`` returns ``(new_taints, verb)``, or ``(None, verb)`` when
        nothing needs writing.  A conflict (another writer) means: read again
        and recompute, so concurrent changes to other taints are never lost.
        Returns ``(node, verb)``.
        """
        first_verb, failure = None, None
        for _ in range(attempts):
            node = self.get_node(name)
            new_taints, verb = compute(node.get("spec", {}).get("taints") or [])
            if new_taints is None:
                # A write whose answer was lost may have landed already.
                return node, first_verb or verb
            patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                     "spec": {"taints": new_taints or None}}
            delay = None
            try:
                # Not retried inside request(): a retry of a write that landed unseen gets 409,
                # which must not pass for another writer's change.
                return self.patch_node(node, patch, dry_run=dry_run, retry=False), verb
            except ApiError as exc:
                if exc.status != 409 and exc.status not in _RETRYABLE:
                    raise
                failure, delay = (None if exc.status == 409 else exc), exc.retry_after
                if exc.status not in (409, 429):      # 5xx: the write may have landed
                    first_verb = first_verb or verb
            except ConnectionFailed as exc:
                first_verb, failure = first_verb or verb, exc
            time.sleep(min(delay, 10) if delay else random.uniform(0.05, 0.3))
        if failure is not None:
            raise failure
        raise ConflictError(f"node {name} kept changing while writing its taints "
                            f"({attempts} attempts); try again")

    # -- pods, PDBs, DaemonSets ------------------------------------------------------------------
    def list_pods_on_node(self, node_name, not_older_than=None):
        """The node's pods (server-side field selector).  ``not_older_than``, the
        resourceVersion of an earlier consistent read, lets the API server answer from its
        watch cache at once instead of first catching up with etcd, as each consistent
        read must (hundreds of lists on a large cluster)."""
        params = {"fieldSelector": f"spec.nodeName={node_name}"}
        if not_older_than:
            params.update(resourceVersion=not_older_than, resourceVersionMatch="NotOlderThan")
        items, _ = self.list_all("/api/v1/pods", params, what=f"listing pods on node {node_name}")
        return items

    def get_pod(self, namespace, name):
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}",
                        what=f"reading pod {namespace}/{name}")

    def list_pdbs(self):
        items, _ = self.list_all("/apis/policy/v1/poddisruptionbudgets",
                                 what="listing PodDisruptionBudgets")
        return items

    def daemonset_exists(self, namespace, name):
        try:
            self.get(f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
                     what=f"reading DaemonSet {namespace}/{name}")
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    def can_i(self, verb, resource, *, group="", subresource="", namespace=""):
        """A SelfSubjectAccessReview: True or False, or None when the server cannot say."""
        attributes = {"verb": verb, "group": group, "resource": resource}
        attributes.update({k: v for k, v in (("subresource", subresource), ("namespace", namespace)) if v})
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}
        try:
            review = self.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                  body=body, content_type="application/json", retry=True,
                                  what="checking permissions").json()
        except (ApiError, ConnectionFailed):
            return None
        return bool((review.get("status") or {}).get("allowed"))

    def evict(self, namespace, name, uid, *, grace_period, dry_run):
        """POSTs a policy/v1 Eviction with a UID precondition.  Errors carry the status."""
        if dry_run is DryRun.CLIENT:
            return
        delete_options = {"preconditions": {"uid": uid}}
        if grace_period is not None and grace_period >= 0:
            delete_options["gracePeriodSeconds"] = grace_period
        params = None
        if dry_run is DryRun.SERVER:
            delete_options["dryRun"] = ["All"]
            params = {"dryRun": "All"}
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": delete_options}
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", params=params,
                     body=body, content_type="application/json", retry=False,
                     what=f"evicting pod {namespace}/{name}")

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        """Yields (type, pod) events for pods bound to the node until the server ends the watch."""
        params = {"watch": "1", "fieldSelector": f"spec.nodeName={node_name}",
                  "resourceVersion": resource_version, "timeoutSeconds": int(timeout_seconds),
                  "allowWatchBookmarks": "true"}
        import urllib3
        raw = self.request("GET", "/api/v1/pods", params=params, stream=True, retry=False,
                           what=f"watching pods on node {node_name}",
                           timeout=urllib3.Timeout(connect=30, read=timeout_seconds + 10))
        finished = False
        try:
            buffer = b""
            for chunk in raw.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type"), event.get("object") or {}
            finished = True
        except urllib3.exceptions.HTTPError:
            return
        finally:
            if not finished:
                raw.close()   # a stream left unread (caller stopped early) must not be reused
            raw.release_conn()

    def list_pods_on_node_with_version(self, node_name):
        return self.list_all("/api/v1/pods", {"fieldSelector": f"spec.nodeName={node_name}"},
                             what=f"listing pods on node {node_name}")


def _short(exc):
    text = str(getattr(exc, "reason", None) or exc)
    for marker in ("Connection refused", "Name or service not known", "timed out",
                   "certificate verify failed", "Connection reset", "No route to host",
                   "Remote end closed connection"):
        if marker in text:
            return marker.lower()
    return text.split(": ")[-1][:120]


def _merge(target, patch):
    """RFC 7386 JSON merge patch, for client-side dry runs."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def connect(options, *, pool_size=10):
    """Loads the kubeconfig (or the in-cluster config) and returns a Kube."""
    from . import kubeconfig

    paths = kubeconfig.find_paths(options.kubeconfig)
    if not paths:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return _connect_in_cluster(options, pool_size)
        raise ConfigError("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, "
                          "or create ~/.kube/config")
    merged = kubeconfig.merge(paths)
    selected = kubeconfig.select(merged, context=options.context, cluster=options.cluster,
                                 user=options.user, namespace=options.namespace)
    return Kube(selected, options, pool_size=pool_size)


def _connect_in_cluster(options, pool_size):
    """The pod's service account, loaded by the kubernetes package."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config

    from .kubeconfig import Merged, Selected

    config = Configuration()
    try:
        load_incluster_config(client_configuration=config)
    except ConfigException as exc:
        raise ConfigError(f"in-cluster configuration failed: {exc}") from None
    namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    namespace = options.namespace
    if not namespace and os.path.isfile(namespace_file):
        with open(namespace_file, encoding="utf-8") as handle:
            namespace = handle.read().strip()
    selected = Selected(context="in-cluster", cluster_name="in-cluster", user_name="",
                        cluster={"server": config.host, "certificate-authority": config.ssl_ca_cert},
                        user={}, namespace=namespace or "default", merged=Merged(paths=[]))
    kube = Kube(selected, options, pool_size=pool_size)
    token = (config.api_key or {}).get("authorization")
    kube._in_cluster_auth = {"Authorization": token} if token else {}
    return kube
