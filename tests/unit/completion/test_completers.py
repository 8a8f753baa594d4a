"""The completers where they are attached (each flag's definition, not a destination name),
GPU nodes through the KubeApi calls, and the node summaries judged by the --gpu-taint typed."""

import argparse
import copy
import inspect

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands.common import add_node_flags
from kubectl_gpuisolate.completion import completers
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
from kubectl_gpuisolate.flags import ConnectionOptions, NamedCompleter, add_connection_flags
from kubectl_gpuisolate.kube import KubeApi

CONNECTION = {"--kubeconfig": complete_files, "--context": complete_contexts,
              "--cluster": complete_clusters, "--user": complete_users,
              "--certificate-authority": complete_files, "--client-certificate": complete_files,
              "--client-key": complete_files}
NODE_COMMAND = dict(CONNECTION, NODE=complete_nodes, **{"--gpu-taint": complete_taint})
ATTACHED = {"": CONNECTION, "status": NODE_COMMAND, "taint": NODE_COMMAND, "untaint": NODE_COMMAND,
            # evacuate's --taint is an action of its own (its bare form is the deprecated --taint-first)
            "evacuate": dict(NODE_COMMAND, **{"--taint": complete_taint}),
            "guard": dict(CONNECTION, **{"--gpu-taint": complete_taint}), "completion": {}, "version": {}}


def attached(command_line):
    """{first option string, or NODE for a positional: completer} for what has one."""
    found = {}
    for argument in command_line.options + command_line.positionals:
        completer = getattr(argument.action, "completer", None)  # what argcomplete reads
        if isinstance(completer, NamedCompleter):                # a shared flag's, by name
            assert completer.flag in argument.option_strings
            completer = completer.resolve()
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
    assert evacuate.option("--taint-first").completer is None
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


# -- GPU nodes through the KubeApi calls ----------------------------------------------------------------
def node(name, *taints, gpus="8", labels=None):
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"capacity": {"nvidia.com/gpu": gpus}},
            "spec": {"taints": [dict(zip(("key", "value", "effect"), t)) for t in taints]}}


NODES = [node("gpu-a", ("nvidia.com/gpu", "present", "NoSchedule")),
         node("gpu-b", ("nvidia.com/gpu", "true", "NoExecute")),
         node("gpu-c", ("example.com/accel", "yes", "NoSchedule"), gpus="0",
              labels={"cloud.google.com/gke-accelerator": "nvidia-l4"}),   # GKE, by its label
         node("cpu-1", ("example.com/accel", "yes", "NoSchedule"), gpus="0")]        # no GPU signal


class ListingKube:
    """The one KubeApi call completion makes."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.calls = []

    def list_nodes(self, selector=None, *, limit=None, retry=True):
        self.calls.append((selector, limit, retry))
        return copy.deepcopy(self.nodes)


def test_the_fake_has_the_protocols_signature():
    assert inspect.signature(ListingKube.list_nodes) == inspect.signature(KubeApi.list_nodes).replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty)
                    for p in inspect.signature(KubeApi.list_nodes).parameters.values()],
        return_annotation=inspect.Signature.empty)


@pytest.fixture
def kube(monkeypatch):
    fake = ListingKube(NODES)
    fake.connected = []

    def connect(options, *, pool_size=10):
        fake.connected.append((options, pool_size))
        return fake
    monkeypatch.setattr("kubectl_gpuisolate.kube.connect", connect)
    return fake


def test_nodes_are_one_page_without_retries_over_the_connection_flags(kube):
    args = argparse.Namespace(context="dev", user="u", as_user="me", as_groups=["g"],
                              request_timeout="bogus")  # the completion budget replaces it
    assert set(completers.list_gpu_nodes(args, timeout=0.5)) == {"gpu-a", "gpu-b", "gpu-c"}
    assert kube.calls == [(None, 500, False)]
    assert kube.connected == [(ConnectionOptions(context="dev", user="u", request_timeout=0.5,
                                                 as_user="me", as_groups=("g",)), 1)]


def test_a_usage_error_in_the_connection_flags_gives_nothing(kube):
    assert completers.list_gpu_nodes(argparse.Namespace(as_groups=["g"])) == {}
    assert kube.calls == []


def summaries(line):
    parts = line.split(" ")
    found, directive = complete_words(cli.build_parser(), parts[:-1], parts[-1])
    assert directive == NO_FILE_COMP
    return {name: text.split(", ")[1] for name, text in found.items()}


@pytest.mark.parametrize("line, tainted", [
    ("status ", {"gpu-a"}),                                           # the default's key and effect
    ("status --gpu-taint nvidia.com/gpu=x:NoExecute ", {"gpu-b"}),    # any value
    ("taint --taint=example.com/accel:NoSchedule ", {"gpu-c"}),
    ("untaint --taint nvidia.com/gpu ", {"gpu-a", "gpu-b"}),          # a key alone: every effect
    ("untaint --taint nvidia.com/gpu:NoExecute ", {"gpu-b"}),
    ("evacuate --taint-first --gpu-taint nvidia.com/gpu:NoExecute ", {"gpu-b"}),
    ("evacuate --taint-first ", {"gpu-a"}),
    ("status --gpu-taint nvidia.com/gpu=tr ", {"gpu-a"}),            # half typed: the default
], ids=["default", "typed", "taint", "untaint-key", "untaint-effect", "evacuate", "evacuate-bool",
        "half-typed"])
def test_the_summary_judges_the_gpu_taint_typed(kube, line, tainted):
    found = summaries(line)
    assert set(found) == {"gpu-a", "gpu-b", "gpu-c"}
    assert {name for name, text in found.items() if text == "GPU taint"} == tainted
    assert {text for name, text in found.items() if name not in tainted} <= {"no GPU taint"}


def test_argcompletes_parsed_args_give_the_same_judgement(kube):
    """argcomplete calls the completer with the subcommand's parser and its parsed namespace."""
    parser = cli.build_parser()
    status = parser.command_line.commands["status"].command_line
    args = parser.parse_args(["status", "--gpu-taint", "nvidia.com/gpu=x:NoExecute", "gpu-c"])
    found = complete_nodes(prefix="gpu-", action=status.positionals[0].action, parser=status.parser,
                           parsed_args=args)
    assert found == {"gpu-a": "8 GPU, no GPU taint", "gpu-b": "8 GPU, GPU taint"}
