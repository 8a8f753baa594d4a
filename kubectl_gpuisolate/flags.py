"""Flags shared by every subcommand: connection flags as in kubectl, dry-run
and output format.  No I/O and no ``kubernetes`` import.  It may import core/ and
errors.py only: completion/ reaches kube/, so the connection flags' completers are
attached here by flag name (``completed``) and completion/completers.py fills
``COMPLETERS`` with them.

Shared flags are attached both to the top-level parser and to each
subcommand, with ``default=SUPPRESS`` so that a value given before the
subcommand is not overwritten by the subcommand's default.
"""

import argparse
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Optional, Tuple

from .core.dryrun import DryRun
from .errors import UsageError

# The completers of the flags defined here, by flag name: completion/completers.py fills it
# when it is imported (every completion path imports it first).
COMPLETERS: Dict[str, Callable[..., Iterable[str]]] = {}


class NamedCompleter:
    """``action.completer`` of a flag defined here (what argcomplete calls): the completer
    registered in COMPLETERS under the flag's name, found when completion asks."""

    def __init__(self, flag):
        self.flag = flag

    def resolve(self):
        return COMPLETERS.get(self.flag)

    def __call__(self, **kwargs):
        completer = self.resolve()
        return completer(**kwargs) if completer else ()


def completed(action):
    """Attaches to a flag's action the completer registered under its (first) name."""
    action.completer = NamedCompleter(action.option_strings[0])
    return action


@dataclass(frozen=True)
class ConnectionOptions:
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    namespace: Optional[str] = None
    request_timeout: float = 0.0          # seconds; 0 means no timeout, as in kubectl
    as_user: Optional[str] = None
    as_groups: Tuple[str, ...] = ()
    as_uid: Optional[str] = None
    # kubectl's overrides of the kubeconfig's cluster and user (None: not given, the file decides)
    server: Optional[str] = None
    token: Optional[str] = None
    certificate_authority: Optional[str] = None
    client_certificate: Optional[str] = None
    client_key: Optional[str] = None
    insecure_skip_tls_verify: Optional[bool] = None
    tls_server_name: Optional[str] = None
    disable_compression: Optional[bool] = None
    warnings_as_errors: bool = False
    verbosity: int = 0                    # -v/--v: 6 logs each request, 8 adds bodies


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def parse_duration(text, flag):
    """Parses a kubectl duration: a bare integer (seconds) or Go syntax like 1m30s."""
    text = (text or "").strip()
    if re.fullmatch(r"\d+", text):
        return float(text)
    if text and re.fullmatch(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+", text):
        return sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    raise UsageError(f"invalid {flag} {text!r}: use a duration such as 30s, 2m or 1h30m "
                     "(a bare number means seconds)")


_GO_TRUE, _GO_FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")


def parse_bool(text, flag):
    """A boolean flag's value as Go's strconv.ParseBool (and kubectl's message) reads it."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise UsageError(f'invalid argument "{text}" for "{flag}" flag: strconv.ParseBool: '
                     f'parsing "{text}": invalid syntax')


class _GoBool(argparse.Action):
    """A boolean flag: ``--NAME`` means true, ``--NAME=VALUE`` (a separate option string)
    the value; stored as text for ``parse_bool``."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, (option_string or "").partition("=")[2] or "true")


def deprecated(namespace, flag, instead):
    """Records kubectl's warning for a deprecated flag, in pflag's words ("Flag --x has been
    deprecated, ..."); cli.py prints each once on stderr, before the command runs."""
    warnings = getattr(namespace, "deprecations", None) or []
    line = f"Flag {flag} has been deprecated, {instead}"
    namespace.deprecations = warnings if line in warnings else [*warnings, line]


def parse_level(text):
    """-v/--v: an integer, as kubectl's klog flag (a negative level logs nothing)."""
    try:
        return int(text, 10)
    except (TypeError, ValueError):
        raise UsageError(f'invalid argument "{text}" for "-v, --v" flag: strconv.ParseInt: '
                         f'parsing "{text}": invalid syntax') from None


def parse_dry_run(text):
    try:
        return DryRun(text)
    except ValueError:
        raise UsageError(f"invalid --dry-run {text!r}: use none, client or server") from None


def add_connection_flags(parser):
    group = parser.add_argument_group("connection (as in kubectl)")
    suppress = argparse.SUPPRESS
    completed(group.add_argument("--kubeconfig", default=suppress, metavar="FILE",
                                 help="path to the kubeconfig file (replaces $KUBECONFIG)"))
    completed(group.add_argument("--context", default=suppress, metavar="NAME",
                                 help="the kubeconfig context to use"))
    completed(group.add_argument("--cluster", default=suppress, metavar="NAME",
                                 help="the kubeconfig cluster to use"))
    completed(group.add_argument("--user", default=suppress, metavar="NAME",
                                 help="the kubeconfig user to use"))
    group.add_argument("-n", "--namespace", default=suppress, metavar="NS",
                       help="namespace (accepted for kubectl compatibility; nodes are cluster-wide)")
    group.add_argument("--request-timeout", default=suppress, metavar="DURATION",
                       help="time to wait for one API request, e.g. 10s (0: no timeout)")
    group.add_argument("--as", dest="as_user", default=suppress, metavar="USER",
                       help="user to impersonate")
    group.add_argument("--as-group", dest="as_groups", action="append", default=suppress,
                       metavar="GROUP", help="group to impersonate (repeatable)")
    group.add_argument("--as-uid", default=suppress, metavar="UID", help="UID to impersonate")
    _add_override_flags(group, suppress)
    group.add_argument("--debug", action="store_true", default=suppress,
                       help="print a traceback on failure")
    return group


def _add_override_flags(group, suppress):
    """kubectl's flags that replace the kubeconfig's cluster and user fields."""
    group.add_argument("-s", "--server", default=suppress, metavar="URL",
                       help="the address and port of the Kubernetes API server")
    group.add_argument("--token", default=suppress, metavar="TOKEN",
                       help="bearer token for authentication to the API server")
    completed(group.add_argument("--certificate-authority", default=suppress, metavar="FILE",
                                 help="path to a cert file for the certificate authority"))
    completed(group.add_argument("--client-certificate", default=suppress, metavar="FILE",
                                 help="path to a client certificate file for TLS"))
    completed(group.add_argument("--client-key", default=suppress, metavar="FILE",
                                 help="path to a client key file for TLS"))
    group.add_argument("--tls-server-name", default=suppress, metavar="NAME",
                       help="server name to use for server certificate validation")
    for name, text in (("--insecure-skip-tls-verify", "do not check the server's certificate "
                        "(insecure)"), ("--disable-compression", "opt out of response compression "
                        "for all requests to the server"), ("--warnings-as-errors", "treat warnings "
                        "received from the server as errors and exit with a non-zero exit code")):
        group.add_argument(name, action=_GoBool, default=suppress, help=text)
        # pflag's booleans take a value only after "=": these spellings are separate option
        # strings, so "--insecure-skip-tls-verify status" never reads the subcommand as its value.
        group.add_argument(*(f"{name}={v}" for v in _GO_TRUE + _GO_FALSE), action=_GoBool,
                           dest=name[2:].replace("-", "_"), default=suppress, help=argparse.SUPPRESS)
    group.add_argument("-v", "--v", dest="verbosity", default=suppress, metavar="LEVEL",
                       help="log level: 6 logs each request, 8 adds the response bodies")


def connection_options(args, *, request_timeout=None):
    """The connection flags as parsed; ``request_timeout`` (seconds) replaces
    --request-timeout (completion has its own budget)."""
    if request_timeout is None:
        request_timeout = parse_duration(getattr(args, "request_timeout", "0"), "--request-timeout")
    as_groups = tuple(getattr(args, "as_groups", None) or ())
    as_user = getattr(args, "as_user", None)
    if as_groups and not as_user:
        raise UsageError("--as-group needs --as: impersonating groups requires impersonating a user")
    return ConnectionOptions(**_overrides(args),
        kubeconfig=getattr(args, "kubeconfig", None),
        context=getattr(args, "context", None),
        cluster=getattr(args, "cluster", None),
        user=getattr(args, "user", None),
        namespace=getattr(args, "namespace", None),
        request_timeout=request_timeout,
        as_user=as_user,
        as_groups=as_groups,
    )


def _overrides(args):
    """The kubectl override flags as ConnectionOptions fields: an empty value is no override,
    as kubectl merges them; booleans and the level are checked as kubectl checks them."""
    fields = {}
    for name in ("server", "token", "certificate_authority", "client_certificate", "client_key",
                 "tls_server_name", "as_uid"):
        value = getattr(args, name, None)
        if value:
            fields[name] = value
    for name in ("insecure_skip_tls_verify", "disable_compression", "warnings_as_errors"):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = parse_bool(value, "--" + name.replace("_", "-"))
    fields["warnings_as_errors"] = bool(fields.get("warnings_as_errors"))
    if getattr(args, "verbosity", None) is not None:
        fields["verbosity"] = parse_level(args.verbosity)
    return fields


def add_dry_run_flag(parser):
    parser.add_argument("--dry-run", default="none", choices=[d.value for d in DryRun],
                        help="client: only print what would change; server: send the requests "
                             "with dryRun=All so the API server validates them; none (default): act")


def add_output_flag(parser, choices):
    parser.add_argument("-o", "--output", default="", choices=list(choices),
                        help="output format")
