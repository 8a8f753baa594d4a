"""Flags shared by every subcommand: connection flags as in kubectl, dry-run
and output format.  No I/O and no ``kubernetes`` import; the connection flags'
completers (completion/completers.py) are attached here, where the flags are defined.

Shared flags are attached both to the top-level parser and to each
subcommand, with ``default=SUPPRESS`` so that a value given before the
subcommand is not overwritten by the subcommand's default.
"""

import argparse
import enum
import re
from dataclasses import dataclass
from typing import Optional, Tuple

from .completion.completers import complete_clusters, complete_contexts, complete_files, complete_users
from .errors import UsageError


class DryRun(enum.Enum):
    NONE = "none"
    CLIENT = "client"
    SERVER = "server"

    @property
    def suffix(self):
        return {"none": "", "client": " (dry run)", "server": " (server dry run)"}[self.value]


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


def parse_dry_run(text):
    try:
        return DryRun(text)
    except ValueError:
        raise UsageError(f"invalid --dry-run {text!r}: use none, client or server") from None


def add_connection_flags(parser):
    group = parser.add_argument_group("connection (as in kubectl)")
    suppress = argparse.SUPPRESS
    group.add_argument("--kubeconfig", default=suppress, metavar="FILE",
                       help="path to the kubeconfig file (replaces $KUBECONFIG)").completer = complete_files
    group.add_argument("--context", default=suppress, metavar="NAME",
                       help="the kubeconfig context to use").completer = complete_contexts
    group.add_argument("--cluster", default=suppress, metavar="NAME",
                       help="the kubeconfig cluster to use").completer = complete_clusters
    group.add_argument("--user", default=suppress, metavar="NAME",
                       help="the kubeconfig user to use").completer = complete_users
    group.add_argument("-n", "--namespace", default=suppress, metavar="NS",
                       help="namespace (accepted for kubectl compatibility; nodes are cluster-wide)")
    group.add_argument("--request-timeout", default=suppress, metavar="DURATION",
                       help="time to wait for one API request, e.g. 10s (0: no timeout)")
    group.add_argument("--as", dest="as_user", default=suppress, metavar="USER",
                       help="user to impersonate")
    group.add_argument("--as-group", dest="as_groups", action="append", default=suppress,
                       metavar="GROUP", help="group to impersonate (repeatable)")
    group.add_argument("--debug", action="store_true", default=suppress,
                       help="print a traceback on failure")
    return group


def connection_options(args, *, request_timeout=None):
    """The connection flags as parsed; ``request_timeout`` (seconds) replaces
    --request-timeout (completion has its own budget)."""
    if request_timeout is None:
        request_timeout = parse_duration(getattr(args, "request_timeout", "0"), "--request-timeout")
    as_groups = tuple(getattr(args, "as_groups", None) or ())
    as_user = getattr(args, "as_user", None)
    if as_groups and not as_user:
        raise UsageError("--as-group needs --as: impersonating groups requires impersonating a user")
    return ConnectionOptions(
        kubeconfig=getattr(args, "kubeconfig", None),
        context=getattr(args, "context", None),
        cluster=getattr(args, "cluster", None),
        user=getattr(args, "user", None),
        namespace=getattr(args, "namespace", None),
        request_timeout=request_timeout,
        as_user=as_user,
        as_groups=as_groups,
    )


def add_dry_run_flag(parser):
    parser.add_argument("--dry-run", default="none", choices=[d.value for d in DryRun],
                        help="client: only print what would change; server: send the requests "
                             "with dryRun=All so the API server validates them; none (default): act")


def add_output_flag(parser, choices):
    parser.add_argument("-o", "--output", default="", choices=list(choices),
                        help="output format")
