"""The completers where they are attached (each flag's definition, not a destination name)."""

import argparse

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands.common import add_node_flags
from kubectl_gpuisolate.completion.completers import (
    complete_clusters,
    complete_contexts,
    complete_files,
    complete_nodes,
    complete_taint,
    complete_users,
)
from kubectl_gpuisolate.completion.kubectl_helper import NO_FILE_COMP, complete_words
from kubectl_gpuisolate.completion.registry import RecordingParser
from kubectl_gpuisolate.flags import add_connection_flags

CONNECTION = {"--kubeconfig": complete_files, "--context": complete_contexts,
              "--cluster": complete_clusters, "--user": complete_users}
NODE_COMMAND = dict(CONNECTION, NODE=complete_nodes, **{"--gpu-taint": complete_taint})
ATTACHED = {"": CONNECTION, "status": NODE_COMMAND, "taint": NODE_COMMAND, "untaint": NODE_COMMAND,
            "evacuate": NODE_COMMAND, "completion": {}, "version": {}}


def attached(command_line):
    """{first option string, or NODE for a positional: completer} for what has one."""
    found = {}
    for argument in command_line.options + command_line.positionals:
        completer = getattr(argument.action, "completer", None)  # what argcomplete reads
        assert completer is argument.completer
        if completer is not None:
            name = argument.option_strings[0] if argument.option_strings else argument.action.metavar
            found[name] = completer
    return found


def test_each_completer_is_on_its_flag_and_nowhere_else():
    parser = cli.build_parser()
    found = {"": attached(parser.command_line)}
    found.update({name: attached(c.command_line) for name, c in parser.command_line.commands.items()})
    assert found == ATTACHED


def test_evacuates_boolean_taint_flag_has_no_completer_and_its_gpu_taint_completes():
    evacuate = cli.build_parser().command_line.commands["evacuate"].command_line
    assert evacuate.option("--taint").completer is None
    assert evacuate.option("--gpu-taint").completer is complete_taint
    assert complete_words(cli.build_parser(), ["evacuate", "--gpu-taint"], "") == (
        {"nvidia.com/gpu=true:NoSchedule": "the default"}, NO_FILE_COMP)
    found, _ = complete_words(cli.build_parser(), ["evacuate", "--gpu-taint"], "k:NoE")
    assert list(found) == ["k:NoExecute"]


def test_the_flag_helpers_attach_their_completers():
    parser = RecordingParser()
    add_connection_flags(parser)
    add_node_flags(parser)
    assert attached(parser.command_line) == dict(CONNECTION, NODE=complete_nodes)
    plain = argparse.ArgumentParser()  # plain argparse still works: the attribute is argcomplete's
    add_connection_flags(plain)
    add_node_flags(plain)
    assert plain.parse_args(["--context", "c", "n1"]).nodes == ["n1"]


def test_argcomplete_gets_no_key_colon_guess_for_the_taint():
    """Only kubectl's helper (can_continue) offers 'KEY:'; bash splits argcomplete's words at ':'."""
    assert complete_taint(prefix="example.com/accel=yes") == {}
    assert complete_taint(prefix="example.com/accel=yes", can_continue=True) == {
        "example.com/accel=yes:": "then the effect"}


def test_files_are_left_to_argcomplete_file_completion(tmp_path):
    (tmp_path / "kubeconfig-a").write_text("")
    (tmp_path / "other").write_text("")
    assert list(complete_files(prefix=str(tmp_path / "kube"))) == [str(tmp_path / "kubeconfig-a")]
