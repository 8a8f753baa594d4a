"""No credential is ever printed: bearer tokens (inline, tokenFile, from an exec
plugin), client keys (files and embedded data) and basic-auth passwords never
appear in stdout or stderr, at the highest verbosity (--debug: tracebacks), on
success and on every error path (401, 403, refused, TLS, timeout, failing exec
plugins); and embedded keys leave no file behind."""

import base64
import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from plugin import REPO
from sandbox_helpers import unanswering_servers

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import pki  # noqa: E402

KINDS = ["token", "token-file", "exec", "cert-files", "cert-data", "basic"]
PATHS = ["ok", "401", "403", "refused", "tls", "timeout"]
NO_VALID = {"basic"}                     # the sandbox has no basic auth: every password gets 401


@pytest.fixture(scope="module")
def material(sandbox, tmp_path_factory):
    """Valid and invalid credentials of every kind, and the servers of the error paths."""
    out = tmp_path_factory.mktemp("credentials")
    sandbox_pki = Path(sandbox.dir) / "pki"
    token = pki.token(sandbox_pki)
    wrong = "gpuisolate-e2e-wrong-" + secrets.token_hex(16)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/O=system:masters/CN=stranger",
                    "-addext", "extendedKeyUsage=clientAuth", "-keyout", str(out / "stranger.key"),
                    "-out", str(out / "stranger.crt")], check=True, capture_output=True)
    certs = {True: (sandbox_pki / "admin.crt", sandbox_pki / "admin.key"),
             False: (out / "stranger.crt", out / "stranger.key")}
    other_ca, _ = pki.server_cert(sandbox_pki, out, "not-a-ca")
    with unanswering_servers() as (silent, closed, _):
        yield {"dir": out, "pki": sandbox_pki, "token": {True: token, False: wrong}, "certs": certs,
               "password": "gpuisolate-e2e-pass-" + secrets.token_hex(12), "other_ca": other_ca,
               "server": json.loads((Path(sandbox.dir) / "state.json").read_text())["server"],
               "silent": f"https://127.0.0.1:{silent}", "closed": f"https://127.0.0.1:{closed}"}


def user(kind, valid, m, tmp_path):
    """(kubeconfig user entry, the secrets it holds)."""
    token = m["token"][valid]
    if kind == "token":
        return {"token": token}, [token]
    if kind == "token-file":
        path = tmp_path / "token"
        path.write_text(token + "\n")
        return {"tokenFile": str(path)}, [token]
    if kind == "exec":
        credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                                 "status": {"token": token}})
        helper = tmp_path / "helper"
        helper.write_text(f"#!/bin/sh\necho 'debug: using {token}' >&2\necho '{credential}'\n")
        helper.chmod(0o755)
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(helper),
                         "interactiveMode": "Never"}}, [token]
    if kind == "basic":
        return {"username": "admin", "password": m["password"]}, [m["password"]]
    crt, key = m["certs"][valid]
    pem = key.read_text()
    body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
    needles = [body, pem.strip()] + [line for line in pem.splitlines()
                                     if len(line) >= 16 and "-----" not in line]
    if kind == "cert-files":
        return {"client-certificate": str(crt), "client-key": str(key)}, needles
    data = pki.embedded(crt, key)
    return data, needles + [data["client-key-data"], base64.b64encode(body.encode()).decode()]


CASES = [(k, p) for k in KINDS for p in PATHS if not (k in NO_VALID and p in ("ok", "403"))]


@pytest.mark.parametrize("kind,path", CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_no_credential_is_printed(gpuisolate, material, tmp_path, kind, path):
    entry, needles = user(kind, path != "401" and kind not in NO_VALID, material, tmp_path)
    server = {"refused": material["closed"], "timeout": material["silent"]}.get(path, material["server"])
    ca = material["other_ca"] if path == "tls" else material["pki"] / "ca.crt"
    config = pki.kubeconfig(tmp_path / "kubeconfig", server, ca, {"u": entry})
    extra = {"403": ["--as", "gpuisolate-e2e-nobody"], "timeout": ["--request-timeout", "1s"]}.get(path, [])
    commands = [["status"], ["taint", "--dry-run=server"],
                ["evacuate", "--taint-first", "--delete-emptydir-data", "--dry-run=server", "-o", "json"]]
    temp = tmp_path / "tmp"
    temp.mkdir()
    for command in commands if path == "ok" else commands[:1]:
        result = gpuisolate(*command, "--debug", "--kubeconfig", config, *extra,
                            env=gpuisolate.env(TMPDIR=str(temp)))
        want = {"ok": (0, 10), "401": (5,), "403": (5,), "refused": (4,), "tls": (4,), "timeout": (4,)}[path]
        assert result.returncode in want, (command, result.returncode, result.stderr[-2000:])
        if path != "ok":
            assert result.stderr.strip().splitlines()[-1].startswith("error: ")
            assert "Traceback" in result.stderr            # --debug really printed the chain
        printed = result.stdout + result.stderr
        leaked = [n for n in needles if n in printed]
        assert not leaked, f"{kind}/{path}: printed {leaked[0][:12]}..."
    assert list(temp.iterdir()) == []                      # embedded keys were written and removed
