"""The exec credential plugin shapes of the kubectl parity suite (see parity_shapes.py): plugins
of both API versions generated in the test's tmp dir, with env, args, provideClusterInfo, a
returned certificate, failures, a missing command, wrong API versions and interactive modes."""

import os
from pathlib import Path

from parity_shapes import V1, V1BETA1, credential, kc, one, plugin, token_plugin, write_config


def exec_user_in_second_file(m, tmp):
    first = write_config(tmp / "a", {}, {}, {"x": {"cluster": "c", "user": "u"}}, "x")
    second = one(tmp, m, {"exec": {"apiVersion": V1, "interactiveMode": "Never",
                                   "command": token_plugin(tmp, m)}}, name="b")
    return [], kc(os.pathsep.join([first, second]))


def exec_user(conf):
    def shape(m, tmp):
        body = conf(m, tmp)
        return [], kc(one(tmp, m, {"exec": body}, _cluster_with_extension(m)))
    return shape


def _cluster_with_extension(m):
    return {"server": m["server"], "certificate-authority": m["ca"],
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "gpu"}}]}


EXEC = {
    "exec-v1-env-args": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never", "args": ["--mode", "ok"],
        "env": [{"name": "GPUI_WANT", "value": "yes"}],
        "command": token_plugin(t, m, check='[ "$GPUI_WANT" = yes ] && [ "$1 $2" = "--mode ok" ]')},
    "exec-v1beta1-no-interactive-mode": lambda m, t: {
        "apiVersion": V1BETA1, "command": token_plugin(t, m, V1BETA1)},
    "exec-v1-no-interactive-mode": lambda m, t: {"apiVersion": V1, "command": token_plugin(t, m)},
    "exec-v1-cluster-info": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "IfAvailable", "provideClusterInfo": True,
        "command": token_plugin(t, m, check=_checks_cluster_info(m))},
    "exec-v1beta1-cluster-info": lambda m, t: {
        "apiVersion": V1BETA1, "provideClusterInfo": True,
        "command": token_plugin(t, m, V1BETA1, check=_checks_cluster_info(m))},
    "exec-no-cluster-info-unasked": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never",
        "command": token_plugin(t, m, check="! echo \"$KUBERNETES_EXEC_INFO\" | grep -q '\"cluster\"'")},
    "exec-returns-certificate": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never",
        "command": _cert_plugin(m, t)},
    "exec-failing": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never",
        "command": plugin(t, "cred", "echo nope >&2\nexit 3\n")},
    "exec-missing": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never", "command": "gpuisolate-no-such-plugin",
        "installHint": "install gpuisolate-no-such-plugin from the team wiki"},
    "exec-wrong-api-version": lambda m, t: {
        "apiVersion": "client.authentication.k8s.io/v2", "interactiveMode": "Never",
        "command": token_plugin(t, m)},
    "exec-returns-other-api-version": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Never", "command": token_plugin(t, m, V1BETA1)},
    "exec-always-without-terminal": lambda m, t: {
        "apiVersion": V1, "interactiveMode": "Always", "command": token_plugin(t, m)},
    "exec-no-command": lambda m, t: {"apiVersion": V1, "interactiveMode": "Never"},
}


def _cert_plugin(m, tmp, api_version=V1):
    answer = tmp / "answer.json"
    answer.write_text(credential(api_version, clientCertificateData=Path(m["crt"]).read_text(),
                                 clientKeyData=Path(m["key"]).read_text()))
    return plugin(tmp, "cred", f"cat '{answer}'\n")


EXEC.update({
    "exec-v1beta1-env-args": lambda m, t: {
        "apiVersion": V1BETA1, "args": ["--mode", "ok"], "env": [{"name": "GPUI_WANT", "value": "yes"}],
        "command": token_plugin(t, m, V1BETA1, check='[ "$GPUI_WANT" = yes ] && [ "$1 $2" = "--mode ok" ]')},
    "exec-v1beta1-returns-certificate": lambda m, t: {
        "apiVersion": V1BETA1, "interactiveMode": "Never", "command": _cert_plugin(m, t, V1BETA1)},
    "exec-v1beta1-failing": lambda m, t: {
        "apiVersion": V1BETA1, "command": plugin(t, "cred", "exit 1\n")},
    "exec-v1beta1-missing": lambda m, t: {
        "apiVersion": V1BETA1, "command": str(t / "not-there"), "installHint": "ask the platform team"},
    "exec-v1beta1-env-without-name": lambda m, t: {
        "apiVersion": V1BETA1, "command": token_plugin(t, m, V1BETA1), "env": [{"value": "x"}]},
})

EXEC_OK = {"exec-v1beta1-env-args", "exec-v1beta1-returns-certificate", "exec-v1-env-args",
           "exec-v1beta1-no-interactive-mode", "exec-v1-cluster-info",
           "exec-v1beta1-cluster-info", "exec-no-cluster-info-unasked", "exec-returns-certificate"}


def _checks_cluster_info(m):
    """Shell that succeeds only when KUBERNETES_EXEC_INFO has the cluster as client-go sends it."""
    script = ("import json,os,base64,sys; i=json.loads(os.environ['KUBERNETES_EXEC_INFO']); "
              "c=i['spec']['cluster']; "
              f"ok=c['server']=={m['server']!r} and c['config']=={{'audience':'gpu'}} and "
              f"base64.b64decode(c['certificate-authority-data'])==open({m['ca']!r},'rb').read() "
              "and i['spec']['interactive'] is False; sys.exit(0 if ok else 1)")
    return f'python3 -c "{script}"'


def token_beats_exec(m, tmp):
    user = {"token": m["token"], "exec": {"apiVersion": V1, "interactiveMode": "Never",
                                          "command": plugin(tmp, "cred", "exit 9\n")}}
    return [], kc(one(tmp, m, user))
