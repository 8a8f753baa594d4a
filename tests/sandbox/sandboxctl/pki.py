"""Certificates (via the openssl CLI), the static token file and kubeconfigs."""
import os
import secrets
import subprocess
from pathlib import Path

OPERATOR_USER = "gpuisolate-operator"
TOKEN_USER = "sandbox-token-admin"
CLUSTER = "sandbox"

# name -> (subject, extended key usage, SANs or None)
CERTS = {
    "apiserver": ("/CN=kube-apiserver", "serverAuth",
                  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                  "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,"
                  "IP:127.0.0.1,IP:10.96.0.1"),
    "admin": ("/O=system:masters/CN=sandbox-admin", "clientAuth", None),
    "components": ("/O=system:masters/CN=sandbox-components", "clientAuth", None),
    "operator": (f"/CN={OPERATOR_USER}", "clientAuth", None),
}


def openssl(*args, cwd):
    """Runs the openssl CLI in cwd; raises with its last error line."""
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.strip().splitlines()[-1:]}")


def genkey(pki, name):
    """An EC P-256 private key pki/name.key, readable by its owner only."""
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", f"{name}.key", cwd=pki)
    os.chmod(Path(pki) / f"{name}.key", 0o600)


def generate(pki: Path):
    """Create CA, serving/client certificates and the service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    genkey(pki, "ca")
    (pki / "ca.cnf").write_text(
        "[req]\ndistinguished_name=dn\nx509_extensions=v3\n[dn]\n"
        "[v3]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n"
        "subjectKeyIdentifier=hash\n")
    openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=sandbox-ca",
             "-days", "3650", "-config", "ca.cnf", "-out", "ca.crt", cwd=pki)
    for name, (subj, eku, sans) in CERTS.items():
        genkey(pki, name)
        ext = ("[v3]\nbasicConstraints=critical,CA:FALSE\n"
               "keyUsage=critical,digitalSignature,keyEncipherment\n"
               f"extendedKeyUsage={eku}\nauthorityKeyIdentifier=keyid\n")
        if sans:
            ext += f"subjectAltName={sans}\n"
        (pki / f"{name}.ext").write_text(ext)
        openssl("req", "-new", "-key", f"{name}.key", "-subj", subj, "-out", f"{name}.csr", cwd=pki)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-set_serial", str(secrets.randbits(63)), "-days", "3650",
                 "-extfile", f"{name}.ext", "-extensions", "v3", "-out", f"{name}.crt", cwd=pki)
    for tmp in list(pki.glob("*.csr")) + list(pki.glob("*.ext")) + [pki / "ca.cnf"]:
        tmp.unlink()
    genkey(pki, "sa")
    openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    token = secrets.token_hex(32)
    tokens = pki / "tokens.csv"
    tokens.write_text(f'{token},{TOKEN_USER},{TOKEN_USER},"system:masters"\n')
    os.chmod(tokens, 0o600)
    return token


def read_token(pki: Path):
    return (pki / "tokens.csv").read_text().split(",", 1)[0]


def _q(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def kubeconfig(pki: Path, server: str, users: dict, current: str):
    """YAML kubeconfig text. users: context name -> user entry (dict of fields)."""
    lines = ["apiVersion: v1", "kind: Config", "clusters:", f"- name: {CLUSTER}", "  cluster:",
             f"    server: {_q(server)}", f"    certificate-authority: {_q(pki / 'ca.crt')}",
             "contexts:"]
    for ctx in users:
        lines += [f"- name: {ctx}", "  context:", f"    cluster: {CLUSTER}", f"    user: {ctx}"]
    lines += [f"current-context: {current}", "preferences: {}", "users:"]
    for ctx, fields in users.items():
        lines += [f"- name: {ctx}", "  user:"] + [f"    {k}: {_q(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def write_kubeconfigs(state: Path, pki: Path, server: str):
    """.sandbox/kubeconfig for people and tests, components.kubeconfig for the daemons."""
    def cert(name):
        return {"client-certificate": pki / f"{name}.crt", "client-key": pki / f"{name}.key"}
    users = {"sandbox-admin": cert("admin"), "sandbox-operator": cert("operator"),
             "sandbox-token": {"token": read_token(pki)}}
    for fname, text in (("kubeconfig", kubeconfig(pki, server, users, "sandbox-admin")),
                        ("components.kubeconfig",
                         kubeconfig(pki, server, {"components": cert("components")}, "components"))):
        p = state / fname
        p.write_text(text)
        os.chmod(p, 0o600)
