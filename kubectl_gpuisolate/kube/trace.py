"""What kubectl prints about its requests on stderr: ``-v`` logs and the server's warnings.

``Trace`` writes klog-style lines as kubectl's round trippers do: at -v=6 one line per request
(method, URL, status, latency), at -v=7 the request headers too, at -v=8 the response bodies
truncated to 1024 characters (-v=9: whole).  The Authorization header is always masked and
nothing of the client certificate or key is ever known here.  ``Warnings`` prints each
``Warning:`` response header (RFC 7234 code 299) once, as kubectl does, and counts them for
--warnings-as-errors (each text once, as kubectl counts them).
"""

import os
import re
import sys
import threading
import time

TRUNCATE = 1024
_WARNING = re.compile(r'(\d{3}) \S+ "((?:[^"\\]|\\.)*)"(?: "[^"]*")?')
SECRET_HEADERS = ("authorization", "proxy-authorization")


class Trace:
    def __init__(self, level, err=None, *, clock=time.monotonic, now=time.time):
        self.level = level
        self.err = err
        self.clock, self.now = clock, now
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.level >= 6

    def _line(self, text):
        stamp = self.now()
        prefix = time.strftime("I%m%d %H:%M:%S", time.localtime(stamp)) + f".{int(stamp % 1 * 1e6):06d}"
        with self._lock:
            (self.err or sys.stderr).write(f"{prefix} {os.getpid():>7} round_trippers.go:632] {text}\n")

    def request(self, method, url, headers):
        """Logs the request (-v=7 and up); returns the start time for ``response``."""
        if self.level >= 7:
            shown = "".join(f"\n\t{name}: {masked(name, value)}" for name, value in headers.items())
            self._line(f'"Request" verb="{method}" url="{url}" headers=<{shown}\n >')
        return self.clock()

    def response(self, method, url, status, reason, started, data=None):
        if not self.enabled:
            return
        millis = int((self.clock() - started) * 1000)
        status_text = f"{status} {reason or ''}".strip()
        self._line(f'"Response" verb="{method}" url="{url}" status="{status_text}" milliseconds={millis}')
        if self.level >= 8 and data:
            self._line(body_line(data, full=self.level >= 9))

    def failure(self, method, url, started, reason):
        if self.enabled:
            millis = int((self.clock() - started) * 1000)
            self._line(f'"Response" verb="{method}" url="{url}" status="" error="{reason}" '
                       f"milliseconds={millis}")


def masked(name, value):
    if name.lower() in SECRET_HEADERS:
        scheme = str(value).split(" ", 1)[0]
        return f"{scheme} <masked>"
    return value


def body_line(data, *, full=False):
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    cut = "" if full or len(text) <= TRUNCATE else f" [truncated {len(text) - TRUNCATE} chars]"
    shown = text if full else text[:TRUNCATE]
    return '"Response Body" body="' + shown.replace("\\", "\\\\").replace('"', '\\"') + '"' + cut


class Warnings:
    """The server's warnings, each printed once on ``err`` as "Warning: TEXT"."""

    def __init__(self, err=None):
        self.err = err
        self.count = 0
        self._seen = set()
        self._lock = threading.Lock()

    def handle(self, headers):
        values = headers.get("Warning") if headers else None
        if not values:
            return
        for code, text in _WARNING.findall(values):
            if code != "299":
                continue
            text = re.sub(r"\\(.)", r"\1", text)
            with self._lock:
                if text in self._seen:
                    continue
                self._seen.add(text)
                self.count += 1
                (self.err or sys.stderr).write(f"Warning: {text}\n")
