"""Detached component processes: spawn, identify by pid, probe health, stop."""
import fcntl
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path


class SandboxError(Exception):
    """An error reported to the user as one line, without a traceback."""


class State:
    """The state directory (.sandbox/ by default) and its state.json."""

    def __init__(self, root: Path):
        self.root = root
        self.file = root / "state.json"
        self.pki = root / "pki"
        self.logs = root / "logs"
        self.pids = root / "pids"
        self.kubeconfig = root / "kubeconfig"
        self.data = self.load()

    def load(self):
        try:
            return json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}

    def save(self):
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
        tmp.replace(self.file)

    def exists(self):
        return self.file.exists()

    def components(self):
        return self.data.get("components", {})

    def lock(self):
        """Exclusive lock held while a command changes the sandbox."""
        self.root.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:  # the dir may have been removed while we waited
                if os.fstat(fd).st_ino == os.stat(self.root / ".lock").st_ino:
                    return fd
            except FileNotFoundError:
                self.root.mkdir(parents=True, exist_ok=True)
            os.close(fd)


def free_ports(n):
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _stat(pid):
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[0], int(fields[19])  # state, starttime (clock ticks since boot)


def alive(rec):
    """True when rec's pid still runs the same binary it was started as."""
    st = _stat(rec.get("pid", -1))
    if st is None or st[0] in ("Z", "X") or st[1] != rec.get("start"):
        return False
    try:
        exe = os.readlink(f"/proc/{rec['pid']}/exe").removesuffix(" (deleted)")
    except OSError:
        return False
    return exe == rec["exe"]


def spawn(state: State, name, exe, args, env=None):
    state.logs.mkdir(parents=True, exist_ok=True)
    state.pids.mkdir(parents=True, exist_ok=True)
    exe = os.path.realpath(exe)
    log = open(state.logs / f"{name}.log", "ab")
    p = subprocess.Popen([exe, *args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         cwd=state.root, start_new_session=True, close_fds=True,
                         env={**os.environ, **(env or {})})
    log.close()
    st = _stat(p.pid)
    rec = {"pid": p.pid, "start": st[1] if st else None, "exe": exe,
           "log": str(state.logs / f"{name}.log")}
    (state.pids / f"{name}.pid").write_text(f"{p.pid}\n")
    state.data.setdefault("components", {})[name] = rec
    state.save()
    return rec


def stop(rec, timeout=15):
    """Stop one recorded process if (and only if) it is still ours."""
    if not alive(rec):
        return False
    os.kill(rec["pid"], signal.SIGTERM)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not alive(rec):
            return True
        time.sleep(0.1)
    if alive(rec):
        os.kill(rec["pid"], signal.SIGKILL)
        for _ in range(50):
            if not alive(rec):
                break
            time.sleep(0.1)
    return True


def rss_mib(rec):
    try:
        for line in Path(f"/proc/{rec['pid']}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def http_ok(url, ctx=None, timeout=2):
    """GET url; True on HTTP 200. ctx None = plain http or unverified https."""
    if ctx is None and url.startswith("https"):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False


def last_log_line(rec, pattern=("error", "fail", "fatal", "in use")):
    """The most telling recent line of a component log, for one-line errors."""
    try:
        lines = Path(rec["log"]).read_text(errors="replace").splitlines()[-80:]
    except OSError:
        return ""
    for line in reversed(lines):
        if any(p in line.lower() for p in pattern):
            return _summarise(line)
    return _summarise(lines[-1]) if lines else ""


def _summarise(line):
    line = line.strip()
    if line.startswith("{"):  # structured (JSON) log line
        try:
            rec = json.loads(line)
            line = ": ".join(str(rec[k]) for k in ("msg", "err", "error") if rec.get(k))
        except ValueError:
            pass
    return line[:300]
