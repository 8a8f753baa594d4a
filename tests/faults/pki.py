"""Certificates signed by the sandbox CA (openssl CLI) and kubeconfig files for tests.

The sandbox keeps its PKI in $SANDBOX_DIR/pki: ca.crt/ca.key (the cluster CA),
admin.crt/key (O=system:masters), operator.crt/key (CN=gpuisolate-operator),
apiserver.crt/key and tokens.csv (the static token of the `sandbox-token` user).
"""

import base64
import json
import os
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
from sandboxctl.pki import genkey as _key  # noqa: E402  (the sandbox's own helpers)
from sandboxctl.pki import openssl as _openssl


def server_cert(pki, out, name="proxy"):
    """A serving certificate for 127.0.0.1/localhost signed by the sandbox CA -> (crt, key)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _key(out, name)
    (out / f"{name}.ext").write_text(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr",
             cwd=out)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(Path(pki) / "ca.crt"),
             "-CAkey", str(Path(pki) / "ca.key"), "-set_serial", str(secrets.randbits(63)),
             "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=out)
    return out / f"{name}.crt", out / f"{name}.key"


def client_cert(pki, out, name, subject, *, start=None, end=None):
    """A client certificate signed by the sandbox CA -> (crt, key).

    ``start``/``end`` (openssl YYYYMMDDHHMMSSZ) set the validity window, e.g. one
    in the past for an expired certificate (``openssl ca`` is the only openssl 3.0
    command that takes explicit dates)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _key(out, name)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=out)
    db = out / f"{name}-ca"
    db.mkdir(exist_ok=True)
    (db / "index.txt").write_text("")
    (db / "serial").write_text(f"{secrets.randbits(60):016X}\n")
    (db / "ca.cnf").write_text(
        "[ca]\ndefault_ca=c\n[c]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\n"
        "default_md=sha256\npolicy=p\nx509_extensions=v3\n[p]\ncommonName=supplied\n"
        "organizationName=optional\n[v3]\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n")
    dates = ["-startdate", start, "-enddate", end] if start else ["-days", "2"]
    _openssl("ca", "-batch", "-config", "ca.cnf", "-cert", str(Path(pki) / "ca.crt"),
             "-keyfile", str(Path(pki) / "ca.key"), "-in", str(out / f"{name}.csr"),
             "-out", str(out / f"{name}.crt"), "-notext", *dates, cwd=db)
    return out / f"{name}.crt", out / f"{name}.key"


def token(pki):
    """The static token of the sandbox's `sandbox-token` user (system:masters)."""
    return (Path(pki) / "tokens.csv").read_text().split(",", 1)[0]


def kubeconfig(path, server, ca, users, current=None):
    """Writes a kubeconfig with one cluster and one context per user.

    ``users`` maps a context (= user) name to its user entry, e.g.
    ``{"token": ...}`` or ``{"client-certificate": ..., "client-key": ...}``."""
    names = list(users)
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": n, "user": {k: str(v) if isinstance(v, Path) else v for k, v in u.items()}}
                  for n, u in users.items()],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": n}} for n in names],
        "current-context": current or names[0],
    }
    Path(path).write_text(json.dumps(config, indent=1))
    os.chmod(path, 0o600)
    return str(path)


def embedded(crt, key):
    """A user entry with the certificate and key embedded as base64 data."""
    return {"client-certificate-data": base64.b64encode(Path(crt).read_bytes()).decode(),
            "client-key-data": base64.b64encode(Path(key).read_bytes()).decode()}
