"""kubectl is the oracle: each kubeconfig, flag and environment shape (parity_shapes.py) runs
through ``kubectl get nodes -o name`` and ``kubectl gpuisolate status -o json`` (kubectl's plugin
dispatch).  Both succeed and list the same nodes (the plugin's are the GPU nodes among
kubectl's), or both fail, the plugin with one ``error:`` line, a documented exit code and no
traceback.  Where a proxy is in play, both use it or neither does.  Each shape also says which
of the two outcomes kubectl gives, so the suite cannot pass by both failing for another reason.
"""

import json
import re
import subprocess
from pathlib import Path

import parity_exec as x
import parity_shapes as s
import pytest
from sandbox_helpers import GPU_NODES, unanswering_servers

# usage, config, connection, auth, API (README, "Exit codes"); 8 only for HTTP sent to the TLS port
FAILURE_CODES = {2, 3, 4, 5, 8}
OK, FAIL = "ok", "fail"

SHAPES = {
    "sandbox-kubeconfig-cert-files": (s.sandbox_default, OK),
    "cert-data": (s.cert_data, OK),
    "token-inline": (s.token_inline, OK),
    "token-file": (s.token_file, OK),
    "relative-token-file-and-ca": (s.relative_paths, OK),
    "relative-cert-files": (s.relative_cert_files, OK),
    "merged-current-context-from-first": (s.merged_current_from_first, OK),
    "merged-first-user-wins": (s.merged_first_user_wins, OK),
    "merged-first-bad-user-wins": (s.merged_first_bad_user_wins, FAIL),
    "same-file-twice": (s.same_file_twice, OK),
    "missing-file-skipped": (s.missing_file_skipped, OK),
    "empty-file": (s.empty_file, FAIL),
    "empty-file-merged": (s.empty_file_merged, OK),
    "context-flag": (s.context_flag, OK),
    "user-flag": (s.user_flag, OK),
    "unknown-context": (s.unknown_context, FAIL),
    "no-current-context": (s.no_current_context, FAIL),
    "anonymous-user": (s.anonymous, FAIL),
    "cluster-flag": (s.cluster_flag, OK),
    "kubeconfig-flag-over-env": (s.kubeconfig_flag_over_env, OK),
    "kubeconfig-flag-missing-file": (s.kubeconfig_flag_missing, FAIL),
    "token-file-missing": (s.token_file_missing, FAIL),
    "exec-user-in-second-file": (x.exec_user_in_second_file, OK),
    "ca-twice": (s.ca_twice, FAIL),
    "ca-data": (s.ca_data, OK),
    "no-ca": (s.no_ca, FAIL),
    "insecure-in-file": (s.insecure_file, OK),
    "insecure-and-ca-in-file": (s.insecure_and_ca_file, FAIL),
    "tls-server-name-right": (s.tls_server_name("localhost"), OK),
    "tls-server-name-wrong": (s.tls_server_name("wrong.example"), FAIL),
    "cert-data-and-file": (s.cert_data_and_file, FAIL),
    "key-data-and-file": (s.key_data_and_file, FAIL),
    "cert-without-key": (s.cert_without_key, FAIL),
    "key-without-cert-unused": (s.key_without_cert, OK),
    **{name: (x.exec_user(conf), OK if name in x.EXEC_OK else FAIL) for name, conf in x.EXEC.items()},
    "token-beats-exec": (x.token_beats_exec, OK),
    "impersonation-in-file": (s.impersonation_file, OK),
    "impersonation-in-file-unprivileged": (s.impersonation_file_unprivileged, FAIL),
    "as-flag": (s.with_token(["--as", "jane", "--as-group", "system:masters"]), OK),
    "as-flag-unprivileged": (s.with_token(["--as", "gpuisolate-e2e-nobody"]), FAIL),
    "as-uid-flag": (s.with_token(["--as", "jane", "--as-group", "system:masters", "--as-uid", "42"]), OK),
    "as-uid-without-as": (s.with_token(["--as-uid", "42"]), FAIL),
    "server-token-ca-flags": (s.flags_only(["-s", "{server}", "--token", "{token}",
                                            "--certificate-authority", "{ca}"]), OK),
    "server-flag-closed-port": (s.with_token(["--server", "{closed}"]), FAIL),
    "server-without-scheme": (s.flags_only(["-s", "{hostport}", "--token", "{token}",
                                            "--certificate-authority", "{ca}"]), FAIL),
    "token-flag-wrong": (s.with_token(["--token", "wrong-token"]), FAIL),
    "token-flag-over-file": (s.file_token_overridden, OK),
    "insecure-flag-clears-file-ca": (s.with_token(["--insecure-skip-tls-verify"]), OK),
    "insecure-flag-false": (s.with_token(["--insecure-skip-tls-verify=false"]), OK),
    "insecure-flag-and-ca-flag": (s.with_token(["--insecure-skip-tls-verify",
                                                "--certificate-authority", "{ca}"]), FAIL),
    "ca-flag-wrong-ca": (s.with_token(["--certificate-authority", "{other_ca}"]), FAIL),
    "ca-flag-missing-file": (s.with_token(["--certificate-authority", "{missing}"]), FAIL),
    "client-cert-flags": (s.cert_flags, OK),
    "client-cert-flag-without-key": (s.flags_only(["-s", "{server}", "--certificate-authority", "{ca}",
                                                   "--client-certificate", "{crt}"]), FAIL),
    "tls-server-name-flag-wrong": (s.with_token(["--tls-server-name", "wrong.example"]), FAIL),
    "tls-server-name-flag-right": (s.with_token(["--tls-server-name", "localhost"]), OK),
    "disable-compression": (s.with_token(["--disable-compression"]), OK),
    "verbosity-6": (s.with_token(["-v=6"]), OK),
    "verbosity-9": (s.with_token(["--v=9"]), OK),
    "warnings-as-errors": (s.with_token(["--warnings-as-errors"]), OK),
    "request-timeout": (s.with_token(["--request-timeout", "20s"]), OK),
    "https-proxy-loopback-not-proxied": (s.proxied("HTTPS_PROXY"), OK),
    "https-proxy-localhost-not-proxied": (s.proxied("HTTPS_PROXY", "server_localhost"), OK),
    "https-proxy-lower-case": (s.proxied("https_proxy", "server_named"), OK),
    "https-proxy-named-host": (s.proxied("HTTPS_PROXY", "server_named"), OK),
    "http-proxy-ignored-for-https": (s.proxied("HTTP_PROXY", "server_named"), FAIL),
    "no-proxy-leading-dot": (s.proxied("HTTPS_PROXY", "server_named", ".corp.test"), FAIL),
    "no-proxy-domain-matches-subdomain": (s.proxied("HTTPS_PROXY", "server_named", "corp.test"), FAIL),
    "no-proxy-other-domain": (s.proxied("HTTPS_PROXY", "server_named", "other.test,.example"), OK),
    "no-proxy-host-and-port": (s.proxied("HTTPS_PROXY", "server_named", "kube.corp.test:{port}"), FAIL),
    "no-proxy-host-other-port": (s.proxied("HTTPS_PROXY", "server_named", "kube.corp.test:1"), OK),
    "no-proxy-star": (s.proxied("HTTPS_PROXY", "server_named", "*"), FAIL),
    "no-proxy-cidr-not-a-name": (s.proxied("HTTPS_PROXY", "server_named", "10.0.0.0/8"), OK),
    "proxy-url": (s.proxy_url, OK),
    "proxy-url-closed": (s.proxy_url_closed, FAIL),
}


@pytest.fixture(scope="module")
def material(sandbox, tmp_path_factory):
    out = tmp_path_factory.mktemp("parity")
    pki = Path(sandbox.dir) / "pki"
    server = json.loads((Path(sandbox.dir) / "state.json").read_text())["server"]
    port = server.rsplit(":", 1)[1]
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=not-the-ca", "-keyout", str(out / "o.key"),
                    "-out", str(out / "other-ca.crt")], check=True, capture_output=True)
    proxy = s.ConnectProxy()
    with unanswering_servers() as (_, closed, _):
        yield {"server": server, "port": port, "hostport": f"127.0.0.1:{port}",
               "server_localhost": f"https://localhost:{port}",
               "server_named": f"https://kube.corp.test:{port}",
               "ca": str(pki / "ca.crt"), "ca_b64": s.b64(pki / "ca.crt"),
               "crt": str(pki / "admin.crt"), "key": str(pki / "admin.key"),
               "crt_b64": s.b64(pki / "admin.crt"), "key_b64": s.b64(pki / "admin.key"),
               "token": (pki / "tokens.csv").read_text().split(",", 1)[0],
               "other_ca": str(out / "other-ca.crt"), "missing": str(out / "missing.crt"),
               "closed": f"http://127.0.0.1:{closed}", "proxy": proxy.url, "proxy_server": proxy,
               "kubeconfig": str(sandbox.kubeconfig)}
    proxy.shutdown()


def run(command, env, cwd):
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_plugin_connects_as_kubectl_does(gpuisolate, material, tmp_path, monkeypatch, name):
    shape, kubectl_outcome = SHAPES[name]
    monkeypatch.chdir(tmp_path)
    flags, extra = shape(material, tmp_path)
    env = gpuisolate.env(**extra)
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        if var not in extra:
            env.pop(var, None)
    hosts = material["proxy_server"].hosts
    before = len(hosts)
    oracle = run(["kubectl", *flags, "get", "nodes", "-o", "name"], env, tmp_path)
    kubectl_proxied = len(hosts) - before
    ours = run(["kubectl", "gpuisolate", "status", "-o", "json", *flags], env, tmp_path)
    plugin_proxied = len(hosts) - before - kubectl_proxied
    assert (OK if oracle.returncode == 0 else FAIL) == kubectl_outcome, oracle.stderr[-1500:]
    assert (kubectl_proxied > 0) == (plugin_proxied > 0), (kubectl_proxied, plugin_proxied)
    assert "Traceback" not in ours.stderr
    if kubectl_outcome == OK:
        assert ours.returncode == 0, ours.stderr[-1500:]
        listed = {line.split("/", 1)[1] for line in oracle.stdout.split()}
        nodes = {n["name"] for n in json.loads(ours.stdout)["nodes"]}
        assert nodes == listed & set(GPU_NODES) and nodes
    else:
        assert ours.returncode in FAILURE_CODES, (ours.returncode, ours.stderr[-1500:])
        lines = ours.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), ours.stderr[-1500:]
        assert ours.stdout == ""


def test_the_suite_has_the_shapes_it_promises():
    assert len(SHAPES) >= 45
    assert {o for _, o in SHAPES.values()} == {OK, FAIL}


def test_v6_logs_each_request_as_kubectl_does(gpuisolate, material, tmp_path):
    """The same klog line for the node list: verb, URL, status, latency; at -v=9 no credential."""
    env = gpuisolate.env(KUBECONFIG=s.one(tmp_path, material, {"token": material["token"]}))
    line = re.compile(r'^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ round_trippers\.go:\d+\] "Response" verb="GET" '
                      r'url="' + re.escape(material["server"]) + r'/api/v1/nodes\?limit=500" '
                      r'status="200 OK" milliseconds=\d+$', re.M)
    oracle = run(["kubectl", "-v=6", "get", "nodes", "-o", "name"], env, tmp_path)
    ours = run(["kubectl", "gpuisolate", "status", "-v=6"], env, tmp_path)
    assert line.search(oracle.stderr) and line.search(ours.stderr), ours.stderr[-1500:]
    loud = run(["kubectl", "gpuisolate", "status", "--v=9"], env, tmp_path)
    assert loud.returncode == 0 and '"Response Body"' in loud.stderr
    assert material["token"] not in loud.stderr + loud.stdout
    assert "Authorization: Bearer <masked>" in loud.stderr


def warn_on_gpu_taint_policy(name):
    """A ValidatingAdmissionPolicy whose binding only warns (validationActions: [Warn]) when an
    update puts a taint with the GPU key on a node: the API server answers with a Warning header."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["UPDATE"],
                                                               "resources": ["nodes"]}]},
                       "validations": [{"expression": "!has(object.spec.taints) || "
                                                      "object.spec.taints.all(t, t.key != 'nvidia.com/gpu')",
                                        "message": "GPU taint changes are audited (e2e)"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Warn"]}}
    return policy, binding


def test_server_warnings_are_printed_as_kubectl_prints_them_once_each(gpuisolate, clean, rbac):
    """A real admission warning: kubectl and the plugin print the same ``Warning:`` line on stderr,
    the plugin once however many requests carry it; --warnings-as-errors makes it exit 8."""
    from sandbox_helpers import GPU_A, wait_until
    rbac(*warn_on_gpu_taint_policy("gpuisolate-e2e-warn"))

    def kubectl_warning():
        r = clean.kubectl("taint", "node", GPU_A, "nvidia.com/gpu=true:NoSchedule", "--dry-run=server",
                          context="sandbox-admin", check=False)
        return [line for line in r.stderr.splitlines() if line.startswith("Warning:")]
    expected = wait_until("the policy to take effect", kubectl_warning, timeout=60)
    assert len(expected) == 1 and "GPU taint changes are audited (e2e)" in expected[0], expected
    ours = gpuisolate("taint", "--context", "sandbox-admin")       # both GPU nodes: two patches warn
    assert ours.returncode == 0, ours.stderr
    # The plugin's own warnings (the pool note) start with "Warning:" too; the server's name the policy.
    assert [line for line in ours.stderr.splitlines() if "audited (e2e)" in line] == expected
    gpuisolate("untaint", "--context", "sandbox-admin")
    strict = gpuisolate("taint", "--context", "sandbox-admin", "--warnings-as-errors")
    assert strict.returncode == 8, strict.stderr
    assert expected[0] in strict.stderr.splitlines()
