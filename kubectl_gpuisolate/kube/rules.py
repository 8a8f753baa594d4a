"""kubectl's rules on the selected cluster and user: the global flags' overrides, then the
validation client-go applies before it sends anything (with kubectl's messages).

Pure: dicts in, dicts out or a ConfigError; reads files only to check that they can be read.
The order is client-go's: the kubeconfig's entry, then each non-empty flag over it
(``--insecure-skip-tls-verify`` or ``--certificate-authority`` replace the file's whole CA
setting; ``--server`` or ``--tls-server-name`` its tls-server-name).
"""

import dataclasses

from ..errors import ConfigError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")


def apply_overrides(selected, options):
    """The Selected with the connection flags over its cluster and user entries."""
    cluster, user = dict(selected.cluster), dict(selected.user)
    if options.server:
        cluster["server"] = options.server
    if options.insecure_skip_tls_verify or options.certificate_authority:
        cluster["insecure-skip-tls-verify"] = bool(options.insecure_skip_tls_verify)
        cluster.pop("certificate-authority-data", None)
        cluster["certificate-authority"] = options.certificate_authority or ""
    if options.tls_server_name or options.server:
        cluster["tls-server-name"] = options.tls_server_name or ""
    if options.disable_compression:
        cluster["disable-compression"] = True
    for key, value in (("token", options.token), ("client-certificate", options.client_certificate),
                       ("client-key", options.client_key), ("as", options.as_user),
                       ("as-uid", options.as_uid)):
        if value:
            user[key] = value
    if options.as_groups:
        user["as-groups"] = list(options.as_groups)
    if cluster.get("server") and "://" not in cluster["server"]:
        # kubectl decides "is this TLS?" from the server alone, before it reads any CA or
        # certificate: a server without a scheme is plain http (and a TLS port answers 400).
        cluster["server"] = "http://" + cluster["server"]
    return dataclasses.replace(selected, cluster=cluster, user=user)


def apply_in_cluster_overrides(selected, options):
    """client-go's in-cluster config takes only a token and a CA file from the flags ("in-cluster
    configs only takes a host, token, or CA file"; --server is not in-cluster at all)."""
    cluster, user = dict(selected.cluster), dict(selected.user)
    if options.certificate_authority:
        cluster["certificate-authority"] = options.certificate_authority
    if options.token:
        user["token"] = options.token
    return dataclasses.replace(selected, cluster=cluster, user=user)


def validate(selected):
    """Raises ConfigError with kubectl's message(s) when the cluster or user is unusable."""
    if selected.in_cluster:
        return
    problems = cluster_problems(selected.cluster, selected.cluster_name)
    problems += user_problems(selected.user, selected.user_name)
    if problems:
        raise ConfigError("; ".join(problems))


def _unreadable(path, what, owner):
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        return f"unable to read {what} {path} for {owner} due to open {path}: {reason}"


def cluster_problems(cluster, name):
    problems = []
    ca, ca_data = cluster.get("certificate-authority"), cluster.get("certificate-authority-data")
    if cluster.get("insecure-skip-tls-verify") and (ca or ca_data):
        problems.append("specifying a root certificates file with the insecure flag is not allowed")
    if ca and ca_data:
        problems.append(f"certificate-authority-data and certificate-authority are both specified "
                        f"for {name}. certificate-authority-data will override.")
    if ca:
        problems.append(_unreadable(ca, "certificate-authority", name))
    return [p for p in problems if p]


def user_problems(user, name):
    problems = _cert_problems(user, name) + _exec_problems(user, name)
    if not user.get("as") and (user.get("as-uid") or user.get("as-groups") or user.get("as-user-extra")):
        problems.append(f"requesting uid, groups or user-extra for {name} without impersonating a user")
    return problems


def _cert_problems(user, name):
    cert, cert_data = user.get("client-certificate"), user.get("client-certificate-data")
    key, key_data = user.get("client-key"), user.get("client-key-data")
    if not (cert or cert_data):
        return []                          # a key alone is not used, as in client-go
    problems = []
    if cert and cert_data:
        problems.append(f"client-cert-data and client-cert are both specified for {name}. "
                        "client-cert-data will override.")
    if key and key_data:
        problems.append(f"client-key-data and client-key are both specified for {name}; "
                        "client-key-data will override")
    if not (key or key_data):
        problems.append(f"client-key-data or client-key must be specified for {name} to use the "
                        "clientCert authentication method.")
    if cert:
        problems.append(_unreadable(cert, "client-cert", name))
    if key:
        problems.append(_unreadable(key, "client-key", name))
    return [p for p in problems if p]


def _exec_problems(user, name):
    conf = user.get("exec")
    if not conf:
        return []
    problems = []
    if user.get("auth-provider"):
        problems.append(f"authProvider cannot be provided in combination with an exec plugin for {name}")
    for key in ("command", "apiVersion"):
        if not conf.get(key):
            problems.append(f"{key} must be specified for {name} to use exec authentication plugin")
    if any(not (item or {}).get("name") for item in conf.get("env") or ()):
        problems.append(f"env variable name must be specified for {name} to use exec authentication plugin")
    mode = interactive_mode(conf)
    if not mode:
        problems.append(f"interactiveMode must be specified for {name} to use exec authentication plugin")
    elif mode not in INTERACTIVE_MODES:
        problems.append(f'invalid interactiveMode for {name}: "{mode}"')
    if not problems and conf["apiVersion"] not in EXEC_API_VERSIONS:
        problems.append(f'exec plugin: invalid apiVersion "{conf["apiVersion"]}"')
    return problems


def interactive_mode(conf):
    """The exec plugin's interactiveMode, defaulted as kubeconfig v1 defaults it: IfAvailable for
    the older API versions, none (an error) for client.authentication.k8s.io/v1."""
    mode = conf.get("interactiveMode") or ""
    if not mode and conf.get("apiVersion") in (EXEC_API_VERSIONS[1], "client.authentication.k8s.io/v1alpha1"):
        return "IfAvailable"
    return mode
