#!/usr/bin/env python3
"""A fault-injecting HTTPS proxy for the Kubernetes API (tests only; stdlib only).

    client --TLS--> proxy on 127.0.0.1 --TLS--> the sandbox's kube-apiserver

The proxy terminates TLS with its own serving certificate, signed by the
sandbox CA for 127.0.0.1, so a kubeconfig that trusts the sandbox CA trusts it.

Authentication, end to end (honest, but not transparent for certificates):
- A request with an ``Authorization`` header (bearer token, basic auth) is
  relayed as it is, over an upstream connection without a client certificate:
  the API server authenticates the client's own credentials.
- A client certificate cannot be relayed: the proxy never holds the client's
  private key.  The proxy asks for one and verifies it against the sandbox CA
  (a certificate that does not verify fails the handshake), then relays the
  request over a connection authenticated with the sandbox *admin* certificate,
  adding ``Impersonate-User`` (the certificate's CN) and ``Impersonate-Group``
  (each O), so the API server authorizes the identity in the client's
  certificate.  A certificate client that impersonates by itself (``--as``) is
  relayed as it is only when its CN is the admin's; otherwise the proxy answers
  501, because "X impersonates Y" cannot be expressed through impersonation.
- No credentials: relayed anonymously.

Faults follow a seeded schedule (schedule.py: the seed and each endpoint's
request count decide, not thread timing).  Kinds (counted in ``stats()``):

  500, 503      answered by the proxy; nothing reaches the API server
  504           forwarded, then the server's answer replaced by 504 (a write landed unseen)
  429           Too Many Requests with Retry-After: 1 (header and details.retryAfterSeconds)
  429-bare      Too Many Requests without Retry-After
  reset         the connection reset (RST) before forwarding
  reset-after   forwarded, then the connection reset instead of the answer
  stall         no answer for ``stall`` seconds (> the client's --request-timeout), then closed
  stall-after   forwarded, then the answer withheld for ``stall`` seconds, then closed
  409-node      409 Conflict on PATCH/PUT of /api/v1/nodes/NAME (not forwarded)

Watches get only the kinds that act before forwarding.  ``force()`` adds
deterministic faults for tests (e.g. "the first node PATCH gets 504").
"""

import argparse
import http.client
import json
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from faults import pki as pkitools  # noqa: E402
from faults.schedule import AFTER, KINDS, NODE_WRITE, Schedule  # noqa: E402

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
              "upgrade", "host", "content-length"}
_STATUS_TEXT = {500: ("InternalError", "Internal error (injected by the fault proxy)"),
                503: ("ServiceUnavailable", "the server is currently unable to handle the request "
                                            "(injected by the fault proxy)"),
                504: ("Timeout", "the server was unable to return a response in the time allotted "
                                 "(injected by the fault proxy)"),
                429: ("TooManyRequests", "Too many requests, please try again later "
                                         "(injected by the fault proxy)")}


def _status_body(code, reason, message, retry_after=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if retry_after:
        body["details"] = {"retryAfterSeconds": retry_after}
    return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self._upstream = {}

    def handle(self):
        try:
            self.request.do_handshake()
            super().handle()
        except (OSError, ValueError, http.client.HTTPException):
            pass
        finally:
            for conn in self._upstream.values():
                conn.close()

    def finish(self):
        try:
            super().finish()
        except (OSError, ValueError):
            pass

    def log_message(self, *args):
        pass

    # -- one request ----------------------------------------------------------------------------
    def _relay(self):
        proxy = self.server.proxy
        body = self._read_body()
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        watch = query.get("watch", [""])[0] in ("1", "true")
        kind = proxy.schedule.decide(self.command, url.path, watch)
        proxy.record(kind, self.command, url.path)
        if kind in ("500", "503"):
            return self._answer(int(kind))
        if kind in ("429", "429-bare"):
            return self._answer(429, retry_after=1 if kind == "429" else None)
        if kind == NODE_WRITE:
            name = url.path.rsplit("/", 1)[-1]
            return self._answer(409, reason="Conflict", message=(
                f'Operation cannot be fulfilled on nodes "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again "
                "(injected by the fault proxy)"))
        if kind == "reset":
            return self._reset()
        if kind == "stall":
            return self._stall()
        try:
            response = self._forward(body)
        except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
            proxy.note("upstream-error")
            return self._answer(502, reason="BadGateway", message=f"fault proxy: upstream failed: {exc}")
        if response is None:
            return None
        if kind in AFTER:
            response.read()
            return {"504": lambda: self._answer(504), "reset-after": self._reset,
                    "stall-after": self._stall}[kind]()
        return self._pass_back(response, watch)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _relay

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _identity(self):
        """(upstream mode, extra headers) for this client, or None after answering 501."""
        proxy = self.server.proxy
        if self.headers.get("Authorization"):
            return "plain", {}
        peer = self.request.getpeercert()
        if not peer:
            return "plain", {}
        fields = [item for rdn in peer.get("subject", ()) for item in rdn]
        common_name = next((v for k, v in fields if k == "commonName"), "")
        groups = [v for k, v in fields if k == "organizationName"]
        if self.headers.get("Impersonate-User") or self.headers.get("Impersonate-Group"):
            if common_name == proxy.admin_cn:
                return "admin", {}
            self._answer(501, reason="NotImplemented", message=(
                "fault proxy: cannot relay impersonation for a client-certificate user other "
                "than the admin; use a token kubeconfig"))
            return None
        return "admin", {"Impersonate-User": [common_name], "Impersonate-Group": groups}

    def _forward(self, body):
        identity = self._identity()
        if identity is None:
            return None
        mode, extra = identity
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        for name, values in extra.items():
            headers.extend((name, v) for v in values)
        if body is not None:
            headers.append(("Content-Length", str(len(body))))
        for attempt in (1, 2):          # a kept-alive upstream connection may have been closed
            conn = self._upstream.get(mode)
            if conn is None:
                conn = self.server.proxy.upstream_connection(mode)
                self._upstream[mode] = conn
            try:
                conn.putrequest(self.command, self.path, skip_host=False, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders(body)
                return conn.getresponse()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._upstream.pop(mode, None)
                if attempt == 2:
                    raise
        return None

    def _pass_back(self, response, watch):
        if response.status == 409:
            self.server.proxy.note("upstream-409")      # a real conflict, for the record
        headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
        self.send_response_only(response.status, response.reason)
        for name, value in headers:
            self.send_header(name, value)
        if not watch:
            data = response.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            for conn in self._upstream.values():
                conn.close()
            self._upstream.clear()
            self.close_connection = True
        return None

    # -- fault actions -------------------------------------------------------------------------
    def _answer(self, code, *, reason=None, message=None, retry_after=None):
        default_reason, default_message = _STATUS_TEXT.get(code, ("", ""))
        data = _status_body(code, reason or default_reason, message or default_message, retry_after)
        self.send_response_only(code)
        self.send_header("Content-Type", "application/json")
        if retry_after:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self):
        self.close_connection = True
        try:
            self.rfile.close()
            self.connection.close()
        except OSError:
            pass

    def _reset(self):
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self._drop()

    def _stall(self):
        self.server.proxy.stopping.wait(self.server.proxy.stall)
        self._drop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, proxy, port):
        self.proxy = proxy
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self):          # no reverse DNS lookup of the address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def get_request(self):
        sock, address = self.socket.accept()
        sock.settimeout(120)
        return self.proxy.tls.wrap_socket(sock, server_side=True,
                                          do_handshake_on_connect=False), address

    def handle_error(self, request, client_address):
        pass


class FaultProxy:
    """The proxy, served by a background thread.  ``with FaultProxy(...) as proxy: ...``"""

    def __init__(self, upstream, pki_dir, workdir, *, seed=0, rate=0.0, stall=5.0, kinds=KINDS,
                 port=0, admin_cn="sandbox-admin"):
        self.pki = Path(pki_dir)
        self.upstream = urlsplit(upstream)
        self.stall = stall
        self.admin_cn = admin_cn
        self.schedule = Schedule(seed, rate, kinds)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._stats = Counter()
        self.log = []
        cert, key = pkitools.server_cert(self.pki, workdir, "fault-proxy")
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.tls.verify_mode = ssl.CERT_OPTIONAL
        self.tls.load_verify_locations(cafile=str(self.pki / "ca.crt"))
        self._contexts = {"plain": ssl.create_default_context(cafile=str(self.pki / "ca.crt"))}
        self._contexts["admin"] = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        self._contexts["admin"].load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        self._server = _Server(self, port)
        self._thread = None

    @property
    def url(self):
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def upstream_connection(self, mode):
        return http.client.HTTPSConnection(self.upstream.hostname, self.upstream.port or 443,
                                           context=self._contexts[mode], timeout=120)

    def start(self):
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- schedule and counts ---------------------------------------------------------------------
    def reseed(self, seed, rate=None, kinds=None):
        """A new run: its own schedule; the log restarts (the counts accumulate)."""
        self.schedule.reseed(seed, rate, kinds)
        with self._lock:
            self.log = []

    def force(self, method, path_pattern, kind, times=1):
        self.schedule.force(method, path_pattern, kind, times)

    def record(self, kind, method, path):
        with self._lock:
            self._stats["requests"] += 1
            if kind:
                self._stats[kind] += 1
                self.log.append(f"{kind} {method} {path}")

    def note(self, what):
        with self._lock:
            self._stats[what] += 1

    def stats(self):
        with self._lock:
            return dict(self._stats)

    def kubeconfig(self, path, token, client=None):
        """A kubeconfig for the proxy: context ``proxy-token`` (the sandbox token) and, with
        ``client`` = (crt, key), ``proxy-cert``."""
        users = {"proxy-token": {"token": token}}
        if client:
            users["proxy-cert"] = {"client-certificate": client[0], "client-key": client[1]}
        return pkitools.kubeconfig(path, self.url, self.pki / "ca.crt", users)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the API server, https://127.0.0.1:PORT")
    parser.add_argument("--pki", required=True, help="the sandbox PKI directory ($SANDBOX_DIR/pki)")
    parser.add_argument("--workdir", required=True, help="where to write the proxy's certificate")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.1, help="share of requests that get a fault")
    parser.add_argument("--stall", type=float, default=5.0, help="seconds a stall lasts")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the proxy here")
    args = parser.parse_args(argv)
    proxy = FaultProxy(args.upstream, args.pki, args.workdir, seed=args.seed, rate=args.rate,
                       stall=args.stall, port=args.port).start()
    if args.kubeconfig:
        pki = Path(args.pki)
        proxy.kubeconfig(args.kubeconfig, pkitools.token(pki), (pki / "admin.crt", pki / "admin.key"))
    print(f"fault proxy on {proxy.url} (seed {args.seed}, rate {args.rate})", flush=True)
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    done.wait()
    proxy.stop()
    print(json.dumps(proxy.stats(), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
