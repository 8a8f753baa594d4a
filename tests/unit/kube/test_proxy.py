"""kube/proxy.py: the proxy as Go's net/http picks it (httpproxy.FromEnvironment)."""

import pytest

from kubectl_gpuisolate.kube.proxy import bypassed, proxy_for

PROXY = "http://proxy:3128"


@pytest.mark.parametrize("server", ["https://127.0.0.1:6443", "https://localhost:6443",
                                    "https://127.5.0.1", "https://[::1]:6443"])
def test_loopback_and_localhost_are_never_proxied(server):
    assert proxy_for(server, {}, {"HTTPS_PROXY": PROXY}) is None


@pytest.mark.parametrize("no_proxy, server, bypass", [
    ("", "https://api.corp.test:6443", False),
    ("*", "https://api.corp.test:6443", True),
    ("corp.test", "https://api.corp.test:6443", True),
    ("corp.test", "https://corp.test:6443", True),
    (".corp.test", "https://api.corp.test:6443", True),
    (".corp.test", "https://corp.test:6443", False),
    ("*.corp.test", "https://api.corp.test", True),
    ("orp.test", "https://api.corp.test", False),
    ("api.corp.test:6443", "https://api.corp.test:6443", True),
    ("api.corp.test:443", "https://api.corp.test:6443", False),
    ("api.corp.test:443", "https://api.corp.test", True),
    ("10.0.0.0/8", "https://10.1.2.3:6443", True),
    ("10.0.0.0/8", "https://11.1.2.3:6443", False),
    ("10.0.0.0/8", "https://ten.corp.test", False),
    ("10.1.2.3", "https://10.1.2.3:6443", True),
    ("10.1.2.3:80", "https://10.1.2.3:6443", False),
    ("fd00::/8", "https://[fd00::1]:6443", True),
    ("[fd00::1]:6443", "https://[fd00::1]:6443", True),
    (" other.test , API.CORP.TEST ", "https://api.corp.test", True),
    (":6443", "https://api.corp.test:6443", False),
], ids=lambda v: repr(v) if isinstance(v, str) else None)
def test_no_proxy_as_go_reads_it(no_proxy, server, bypass):
    assert bypassed(server, no_proxy) is bypass
    expected = None if bypass else PROXY
    assert proxy_for(server, {}, {"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}) == expected


def test_which_variable_is_read():
    server = "https://api.corp.test"
    assert proxy_for(server, {}, {"https_proxy": PROXY}) == PROXY
    assert proxy_for(server, {}, {"HTTPS_PROXY": PROXY, "https_proxy": "http://lower:1"}) == PROXY
    assert proxy_for(server, {}, {"HTTP_PROXY": PROXY}) is None           # http's, not https's
    assert proxy_for("http://api.corp.test", {}, {"HTTP_PROXY": PROXY}) == PROXY
    assert proxy_for(server, {}, {"HTTPS_PROXY": PROXY, "no_proxy": "corp.test"}) is None
    assert proxy_for(server, {}, {"HTTPS_PROXY": "proxy:3128"}) == PROXY   # no scheme: http
    assert proxy_for(server, {}, {}) is None


def test_a_clusters_proxy_url_is_always_used():
    cluster = {"proxy-url": "socks5://s:1080"}
    assert proxy_for("https://127.0.0.1:6443", cluster, {"NO_PROXY": "*"}) == "socks5://s:1080"
