"""flags.py: durations, dry-run values and connection options."""

import argparse

import pytest

from kubectl_gpuisolate.errors import UsageError
from kubectl_gpuisolate.exits import EXIT_USAGE
from kubectl_gpuisolate.flags import (
    ConnectionOptions,
    DryRun,
    add_connection_flags,
    connection_options,
    parse_dry_run,
    parse_duration,
)


@pytest.mark.parametrize("text, seconds", [
    ("0", 0.0), ("5", 5.0), ("30", 30.0), ("1s", 1.0), ("1m30s", 90.0), ("500ms", 0.5),
    ("1h", 3600.0), ("1h30m", 5400.0), ("2m", 120.0), ("1.5s", 1.5), ("0s", 0.0),
    (" 10s ", 10.0), ("250us", 0.00025), ("1000ns", 0.000001),
], ids=lambda v: repr(v) if isinstance(v, str) else None)
def test_parse_duration(text, seconds):
    assert parse_duration(text, "--timeout") == pytest.approx(seconds)


@pytest.mark.parametrize("text", [
    "abc", "-1s", "1d", "", "1.5", "s", "1m30", "1 m", "10x", "-5", "1h-1m",
], ids=lambda v: repr(v))
def test_parse_duration_invalid(text):
    with pytest.raises(UsageError) as info:
        parse_duration(text, "--request-timeout")
    assert info.value.exit_code == EXIT_USAGE
    assert str(info.value).startswith(f"invalid --request-timeout {text.strip()!r}")


def test_parse_duration_none():
    with pytest.raises(UsageError):
        parse_duration(None, "--timeout")


@pytest.mark.parametrize("text, expected, suffix", [
    ("none", DryRun.NONE, ""), ("client", DryRun.CLIENT, " (dry run)"),
    ("server", DryRun.SERVER, " (server dry run)"),
], ids=["none", "client", "server"])
def test_parse_dry_run(text, expected, suffix):
    assert parse_dry_run(text) is expected
    assert expected.suffix == suffix


@pytest.mark.parametrize("text", ["", "true", "Client", "all"], ids=repr)
def test_parse_dry_run_invalid(text):
    with pytest.raises(UsageError) as info:
        parse_dry_run(text)
    assert "use none, client or server" in str(info.value)


def parse_connection(argv):
    parser = argparse.ArgumentParser()
    add_connection_flags(parser)
    return parser.parse_args(argv)


CONNECTION_CASES = [
    ([], ConnectionOptions(), "none"),
    (["--kubeconfig", "/k", "--context", "c", "--cluster", "cl", "--user", "u", "-n", "ns"],
     ConnectionOptions(kubeconfig="/k", context="c", cluster="cl", user="u", namespace="ns"),
     "all-names"),
    (["--namespace", "ns"], ConnectionOptions(namespace="ns"), "long-namespace"),
    (["--request-timeout", "1m30s"], ConnectionOptions(request_timeout=90.0), "timeout"),
    (["--request-timeout", "5"], ConnectionOptions(request_timeout=5.0), "timeout-bare"),
    (["--as", "jane"], ConnectionOptions(as_user="jane"), "as"),
    (["--as", "jane", "--as-group", "a", "--as-group", "b"],
     ConnectionOptions(as_user="jane", as_groups=("a", "b")), "as-groups"),
]


@pytest.mark.parametrize("argv, expected", [c[:2] for c in CONNECTION_CASES],
                         ids=[c[2] for c in CONNECTION_CASES])
def test_connection_options(argv, expected):
    assert connection_options(parse_connection(argv)) == expected


@pytest.mark.parametrize("argv, fragment", [
    (["--as-group", "system:masters"], "--as-group needs --as"),
    (["--request-timeout", "soon"], "invalid --request-timeout 'soon'"),
], ids=["as-group-without-as", "bad-timeout"])
def test_connection_options_invalid(argv, fragment):
    with pytest.raises(UsageError) as info:
        connection_options(parse_connection(argv))
    assert fragment in str(info.value)
    assert info.value.exit_code == EXIT_USAGE


def test_connection_flags_are_suppressed_when_absent():
    assert vars(parse_connection([])) == {}


def test_request_timeout_override_replaces_the_flag_without_parsing_it():
    """Completion's own budget: the typed --request-timeout (even half typed) does not count."""
    args = parse_connection(["--context", "c", "--request-timeout", "soo"])
    expected = ConnectionOptions(context="c", request_timeout=0.5)
    assert connection_options(args, request_timeout=0.5) == expected
    zero = connection_options(parse_connection(["--request-timeout", "2s"]), request_timeout=0)
    assert zero.request_timeout == 0


OVERRIDE_CASES = [
    (["-s", "https://k:6443", "--token", "t", "--certificate-authority", "/ca"],
     ConnectionOptions(server="https://k:6443", token="t", certificate_authority="/ca"), "short-server"),
    (["--server=https://k", "--client-certificate", "/c", "--client-key", "/k", "--tls-server-name", "n"],
     ConnectionOptions(server="https://k", client_certificate="/c", client_key="/k", tls_server_name="n"),
     "long"),
    (["--token", "", "--server", ""], ConnectionOptions(), "empty-is-no-override"),
    (["--insecure-skip-tls-verify"], ConnectionOptions(insecure_skip_tls_verify=True), "bool"),
    (["--insecure-skip-tls-verify=false"], ConnectionOptions(insecure_skip_tls_verify=False), "bool-false"),
    (["--disable-compression=T", "--warnings-as-errors=1"],
     ConnectionOptions(disable_compression=True, warnings_as_errors=True), "go-bool-spellings"),
    (["--as", "j", "--as-uid", "7"], ConnectionOptions(as_user="j", as_uid="7"), "as-uid"),
    (["-v=6"], ConnectionOptions(verbosity=6), "v-equals"),
    (["-v", "8"], ConnectionOptions(verbosity=8), "v-space"),
    (["--v=9"], ConnectionOptions(verbosity=9), "long-v"),
    (["-v4"], ConnectionOptions(verbosity=4), "v-attached"),
]


@pytest.mark.parametrize("argv, expected", [c[:2] for c in OVERRIDE_CASES],
                         ids=[c[2] for c in OVERRIDE_CASES])
def test_kubectls_global_flags(argv, expected):
    assert connection_options(parse_connection(argv)) == expected


def test_a_boolean_flag_never_takes_the_next_word():
    parser = argparse.ArgumentParser()
    add_connection_flags(parser)
    parser.add_argument("command")
    args = parser.parse_args(["--insecure-skip-tls-verify", "status"])
    assert args.command == "status" and connection_options(args).insecure_skip_tls_verify is True


@pytest.mark.parametrize("argv, message", [
    (["-v=abc"],
     'invalid argument "abc" for "-v, --v" flag: strconv.ParseInt: parsing "abc": invalid syntax'),
], ids=["v"])
def test_kubectls_messages_for_bad_values(argv, message):
    with pytest.raises(UsageError) as info:
        connection_options(parse_connection(argv))
    assert str(info.value) == message


def test_go_bool_message():
    from kubectl_gpuisolate.flags import parse_bool
    with pytest.raises(UsageError) as info:
        parse_bool("maybe", "--disable-compression")
    assert str(info.value) == ('invalid argument "maybe" for "--disable-compression" flag: '
                               'strconv.ParseBool: parsing "maybe": invalid syntax')
