"""Requests to one API server: the connection pool, headers, retries and error mapping.

Owns: the urllib3 pool (TLS, proxy, timeouts), the headers of every request (the credentials
of ``auth``, impersonation), bounded retries of safe calls (``retry.REQUESTS``, honouring
Retry-After), the translation of an error answer into the ``errors.ApiError`` subclass of its
status, and paginated lists.  urllib3 is imported when the first connection is made, so
``--help`` and completion do not pay for it.
"""

import json
import random
import time
from typing import Any, Dict, List
from urllib.parse import urlencode, urlsplit

from .. import __version__
from ..errors import ApiError, ConfigError, ConnectionFailed, ServerError, TooManyRequests, api_error
from .auth import Credentials, credentials_for, impersonation, ssl_context
from .proxy import proxy_for
from .retry import REQUESTS
from .trace import Trace, Warnings

USER_AGENT = f"kubectl-gpuisolate/{__version__}"
LIST_CHUNK = 500
ATTEMPTS = 5                               # of a retried request (GETs, unless told otherwise)
RETRYABLE_5XX = {500, 502, 503, 504}       # not 501/505: sending again cannot help


class Response:
    __slots__ = ("status", "headers", "data")

    def __init__(self, status, headers, data):
        self.status, self.headers, self.data = status, headers, data

    def json(self):
        return json.loads(self.data) if self.data else {}


class TlsFailed(ConnectionFailed):
    """The server's certificate did not verify: trying again cannot help."""


def _status_body(response):
    """The Status object of an error answer, or {} (a proxy's HTML, "null", "[]", ...)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _details(body):
    return body.get("details") if isinstance(body.get("details"), dict) else {}


def retry_after(response):
    """Seconds the server asks to wait: the Retry-After header (whole seconds), else the
    Status's details.retryAfterSeconds; None when neither is a positive number."""
    header = response.headers.get("Retry-After")
    if header and header.isdigit():
        return int(header) or None
    seconds = _details(_status_body(response)).get("retryAfterSeconds")
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
        return seconds
    return None


def status_error(response, what):
    """Translates a non-2xx response into the ApiError subclass of its status."""
    body = _status_body(response)
    status = response.status
    message = body.get("message") or response.data.decode("utf-8", "replace").strip()[:200] \
        or f"HTTP {status}"
    causes = [c for c in _details(body).get("causes") or () if isinstance(c, dict)]
    terminating = any(c.get("reason") == "NamespaceTerminating" for c in causes)
    exit_code = None
    if status == 401:
        message = (f"Unauthorized: the server rejected the credentials while {what}; "
                   "refresh the credentials of this kubeconfig user")
    elif status == 403 and not terminating:
        message = f"{message} (while {what}; grant that permission or use another context)"
    elif status not in (404, 409):
        message = f"{message} (HTTP {status} while {what})"
        if status == 403:
            exit_code = ApiError.exit_code   # the namespace is going away, not an RBAC refusal
    return api_error(message, status=status, reason=body.get("reason", ""), causes=causes,
                     retry_after=retry_after(response), exit_code=exit_code)


def retryable(exc):
    """Throttling, a server error or a dropped connection: worth sending again."""
    if isinstance(exc, ConnectionFailed):
        return not isinstance(exc, TlsFailed)
    return isinstance(exc, TooManyRequests) or (isinstance(exc, ServerError)
                                                and exc.status in RETRYABLE_5XX)


def short(exc):
    text = str(getattr(exc, "reason", None) or exc)
    for marker in ("Connection refused", "Name or service not known", "timed out",
                   "certificate verify failed", "Connection reset", "No route to host",
                   "Remote end closed connection"):
        if marker in text:
            return marker.lower()
    return text.split(": ")[-1][:120]


def _proxy_manager(proxy, kwargs):
    """The pool through an http(s) proxy, or a SOCKS5 one when PySocks is installed."""
    import urllib3

    scheme = urlsplit(proxy).scheme
    if scheme in ("http", "https"):
        return urllib3.ProxyManager(proxy, num_pools=1, **kwargs)
    if scheme in ("socks5", "socks5h"):
        import warnings
        try:
            with warnings.catch_warnings():       # urllib3 warns, then raises, without PySocks
                warnings.simplefilter("ignore")
                from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError:
            raise ConfigError(f"proxy {proxy}: a socks5 proxy needs the PySocks package "
                              "(pip install PySocks); or use an http(s) proxy") from None
        kwargs = {k: v for k, v in kwargs.items() if k not in ("server_hostname", "assert_hostname")}
        return SOCKSProxyManager(proxy, num_pools=1, **kwargs)
    raise ConfigError(f"proxy {proxy} is not supported; use an http(s) or socks5 proxy")


class Transport:
    """A connection to one API server, with the credentials of the selected context.

    ``sleep`` and ``rng`` (with ``random()``) are the clock and jitter of the retries.
    """

    def __init__(self, selected, options, *, pool_size=10, credentials=None, backoff=REQUESTS,
                 sleep=time.sleep, rng=random):
        self.selected = selected
        self.options = options
        self.server = selected.cluster["server"].rstrip("/")
        # As kubectl: credentials are read only for an https server, never sent in clear text.
        plain = urlsplit(self.server).scheme == "http" and not selected.in_cluster
        self.credentials = credentials or (Credentials() if plain else credentials_for(selected))
        self.impersonation = impersonation(options.as_user, options.as_groups, selected.user,
                                           getattr(options, "as_uid", None))
        self.backoff, self.sleep, self.rng = backoff, sleep, rng
        self.trace = Trace(getattr(options, "verbosity", 0))
        self.warnings = Warnings()
        self.compress = not selected.cluster.get("disable-compression")
        self._pool = self._make_pool(pool_size)

    # -- connection ------------------------------------------------------------------------------
    def _make_pool(self, pool_size):
        import urllib3

        url = urlsplit(self.server)
        if url.scheme not in ("https", "http"):
            raise ConfigError(f"server {self.server} must start with https:// or http://")
        timeout = self.options.request_timeout or None
        self._timeout = urllib3.Timeout(connect=min(timeout or 30, 30), read=timeout)
        proxy = proxy_for(self.server, self.selected.cluster)
        kwargs = dict(maxsize=pool_size, block=True, retries=False, timeout=self._timeout)
        if url.scheme == "https":
            kwargs["ssl_context"] = ssl_context(self.selected.cluster, self.credentials)
            if self.selected.cluster.get("insecure-skip-tls-verify"):
                # asked for on purpose, as in kubectl: no urllib3 warning on every request
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            if self.selected.cluster.get("tls-server-name"):
                kwargs["server_hostname"] = self.selected.cluster["tls-server-name"]
                kwargs["assert_hostname"] = self.selected.cluster["tls-server-name"]
        if proxy:
            return _proxy_manager(proxy, kwargs)
        return urllib3.PoolManager(num_pools=1, **kwargs)

    def _headers(self, content_type=None):
        from urllib3 import HTTPHeaderDict

        headers = HTTPHeaderDict({"User-Agent": USER_AGENT, "Accept": "application/json"})
        if self.compress:
            headers["Accept-Encoding"] = "gzip"     # as Go's transport, unless disable-compression
        if content_type:
            headers["Content-Type"] = content_type
        headers.update(self.credentials.headers())
        for name, value in self.impersonation:
            headers.add(name, value)
        return headers

    # -- requests -------------------------------------------------------------------------------
    def request(self, method, path, *, params=None, body=None, content_type=None,
                what="calling the API", retry=None, timeout=None, stream=False):
        """Sends the request; returns the Response for 2xx (with ``stream``, the open urllib3
        response), raises the ApiError subclass or ConnectionFailed otherwise.

        ``retry`` (default: for GET) sends it again, ATTEMPTS times in all, after throttling,
        a 5xx or a dropped connection, waiting as ``backoff`` says (Retry-After a floor).
        """
        url = self.server + path + ("?" + urlencode(params, doseq=True) if params else "")
        data = json.dumps(body).encode() if body is not None else None
        retry = (method == "GET") if retry is None else retry

        def send():
            return self._send_once(method, url, data, content_type=content_type,
                                   timeout=timeout, stream=stream, what=what)

        attempts = ATTEMPTS if retry else 1
        for attempt in range(attempts):
            try:
                return self._answer(send, what)
            except (ApiError, ConnectionFailed) as exc:
                if attempt == attempts - 1 or not retryable(exc):
                    raise
                self.sleep(self.backoff.delay(attempt, self.rng, getattr(exc, "retry_after", None)))
        raise AssertionError("unreachable")

    def _answer(self, send, what):
        """A 2xx answer, or its status error; after a 401 the credentials are refreshed
        (an exec plugin's token may have expired) and the request sent once more."""
        response = send()
        if response.status == 401 and self.credentials.refresh():
            response = send()
        if 200 <= response.status < 300:
            return response
        raise status_error(response, what)

    def _send_once(self, method, url, data, *, content_type, timeout, stream, what):
        """One round trip: a Response (or, streaming a 2xx, the open urllib3 response).
        Raises ConnectionFailed when no answer came, ConfigError when credentials fail."""
        import urllib3

        headers = self._headers(content_type if data else None)
        started = self.trace.request(method, url, headers)
        try:
            raw = self._pool.request(method, url, body=data, headers=headers,
                                     timeout=timeout or self._timeout,
                                     preload_content=not stream, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            self.trace.failure(method, url, started, short(exc))
            raise self._failed(exc, what) from None
        self.warnings.handle(raw.headers)
        self.trace.response(method, url, raw.status, getattr(raw, "reason", ""), started,
                            None if stream else raw.data)
        if stream and 200 <= raw.status < 300:
            return raw
        return Response(raw.status, raw.headers, raw.data)

    def _failed(self, exc, what):
        """The ConnectionFailed (or TlsFailed) of a request that got no answer."""
        import urllib3

        try:
            raise exc
        except urllib3.exceptions.SSLError:
            return TlsFailed(f"TLS verification of {self.server} failed ({short(exc)}); "
                             "check certificate-authority in the kubeconfig")
        except urllib3.exceptions.NewConnectionError:
            # Checked first: urllib3 2 makes it a subclass of the timeout errors.
            return self._unreachable(exc, what)
        except (urllib3.exceptions.TimeoutError, urllib3.exceptions.ReadTimeoutError):
            return ConnectionFailed(f"the API server {self.server} did not answer in time while "
                                    f"{what}; raise --request-timeout or check the server")
        except urllib3.exceptions.HTTPError:
            return self._unreachable(exc, what)

    def _unreachable(self, exc, what):
        return ConnectionFailed(f"cannot reach the API server {self.server} while {what} "
                                f"({short(exc)}); check --context or that the cluster is up")

    def get(self, path, params=None, *, what):
        return self.request("GET", path, params=params, what=what).json()

    def list_all(self, path, params=None, *, what, keep=None, at_most=None):
        """(every item, the list's resourceVersion), page by page (limit/continue).  ``keep``
        maps each item as its page arrives (e.g. to the few fields a caller reads), so only one
        page is held whole.  ``at_most``: one page of that many, and None when there are more."""
        params = dict(params or {}, limit=at_most or LIST_CHUNK)
        items: List[Dict[str, Any]] = []
        while True:
            page = self.get(path, params, what=what)
            found = page.get("items") or ()
            items.extend(map(keep, found) if keep else found)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, (page.get("metadata") or {}).get("resourceVersion", "")
            if at_most:
                return None
            params["continue"] = token
            # The token carries the snapshot; the server refuses a resourceVersion beside it.
            params.pop("resourceVersion", None)
            params.pop("resourceVersionMatch", None)
