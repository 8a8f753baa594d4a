"""The proxy to reach the API server, chosen as client-go (Go's net/http) chooses it.

A cluster's ``proxy-url`` is always used.  Otherwise HTTPS_PROXY (https servers) or HTTP_PROXY
(http servers), upper case before lower case, unless the host is ``localhost`` or a loopback
address (never proxied) or NO_PROXY matches it: ``*``; an IP or CIDR; ``host:port``; a domain,
which matches itself and its subdomains, or ``.domain``/``*.domain``, only its subdomains.
Pure: the environment is passed in.
"""

import ipaddress
import os
from urllib.parse import urlsplit


def _env(environ, *names):
    for name in names:
        if environ.get(name):
            return environ[name]
    return ""


def _ip(text):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _split_host_port(entry):
    """("host", "port") of ``host:port`` or ``[v6]:port``; (entry, "") otherwise."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _matches(entry, host, port, ip):
    """One NO_PROXY entry (lower case, trimmed) against the server's host and port."""
    try:
        network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
    except ValueError:
        network = None
    if network is not None:
        return ip is not None and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host or (entry_port and entry_port != port):
        return False
    entry_ip = _ip(entry_host)
    if entry_ip is not None:
        return ip == entry_ip
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    if entry_host.startswith("."):
        return host.endswith(entry_host)
    return host == entry_host or host.endswith("." + entry_host)


def bypassed(server, no_proxy):
    """True when the server is never sent through the environment's proxy."""
    url = urlsplit(server)
    host = (url.hostname or "").lower()
    port = str(url.port or (443 if url.scheme == "https" else 80))
    ip = _ip(host)
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return True
    entries = [e.strip().lower() for e in no_proxy.split(",") if e.strip()]
    return "*" in entries or any(_matches(e, host, port, ip) for e in entries)


def proxy_for(server, cluster, environ=None):
    """The proxy URL for ``server``, or None."""
    if cluster.get("proxy-url"):
        return cluster["proxy-url"]
    environ = os.environ if environ is None else environ
    if urlsplit(server).scheme == "https":
        proxy = _env(environ, "HTTPS_PROXY", "https_proxy")
    else:
        proxy = _env(environ, "HTTP_PROXY", "http_proxy")
    if not proxy or bypassed(server, _env(environ, "NO_PROXY", "no_proxy")):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy           # as Go: a bare host:port is an http proxy
    return proxy
