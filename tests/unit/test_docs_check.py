"""tests/docs_check: the README's status block and the marked shell blocks, on plain text; and the
README as a first page (at most 100 lines, with its generated block and its marked commands)."""
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from docs_check import README, documents, marked_commands, status_block, with_status, without_random_suffixes  # noqa: E402

SKELETON = "intro\n<!-- status:begin (x) -->\n<!-- status:end -->\nafter\n"


def test_a_written_status_block_reads_back_as_it_was_written():
    written = with_status(SKELETON, "NAME  X\nnode-a  1\n")
    assert status_block(written) == "NAME  X\nnode-a  1\n"
    assert written.startswith("intro\n<!-- status:begin (x) -->\n```text\n$ kubectl gpuisolate status\n")
    assert written.endswith("```\n<!-- status:end -->\nafter\n")


def test_writing_the_block_again_replaces_it():
    once = with_status(SKELETON, "old\n")
    assert status_block(with_status(once, "new\n")) == "new\n"
    assert with_status(once, "new\n").count("```text") == 1


@pytest.mark.parametrize("text", ["no markers\n", "<!-- status:begin -->\nplain\n<!-- status:end -->\n",
                                  "<!-- status:begin -->\n```text\n$ other\nx\n```\n<!-- status:end -->\n"])
def test_a_missing_or_foreign_block_is_none(text):
    assert status_block(text) is None


def test_random_suffixes_of_generated_names_are_masked_and_others_kept():
    text = "web-7dc4d8b956-zmc5z  would move\nweb-0  stays\nweb-7dc4d8b956-abc  x\n"
    masked = without_random_suffixes(text, ["web-7dc4d8b956-"])
    assert masked == "web-7dc4d8b956-*****  would move\nweb-0  stays\nweb-7dc4d8b956-abc  x\n"
    assert without_random_suffixes("web-7dc4d8b956-q1w2e", ["web-7dc4d8b956-"]) == \
        without_random_suffixes("web-7dc4d8b956-zmc5z", ["web-7dc4d8b956-"])


def test_a_long_generate_name_is_cut_to_58_characters_as_the_api_server_does():
    prefix = "rook-ceph-exporter-nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9-84f4bc6d5f-"
    name = prefix[:58] + "qw8jd"
    assert without_random_suffixes(name, [prefix]) == prefix[:58] + "*****"


def test_the_longer_prefix_masks_first():
    masked = without_random_suffixes("a-b-xyz12 a-aaaaa", ["a-", "a-b-"])
    assert masked == "a-b-***** a-*****"


def test_marked_commands_give_line_numbers_and_the_exit_code_a_comment_states():
    text = ("# T\n<!-- doctest: sandbox -->\n```sh\nkubectl gpuisolate status\n\n# a comment\n"
            "kubectl gpuisolate taint --gpu-taint x=y:NoExecute   # exit 9: refused\n```\n"
            "```sh\nnot marked\n```\n")
    refused = "kubectl gpuisolate taint --gpu-taint x=y:NoExecute   # exit 9: refused"
    assert marked_commands(text) == [(4, "kubectl gpuisolate status", 0), (7, refused, 9)]


@pytest.mark.parametrize("text", ["<!-- doctest: sandbox -->\ntext\n",
                                  "<!-- doctest: sandbox -->\n```sh\nx\n"])
def test_a_marker_without_a_closed_block_is_an_error(text):
    with pytest.raises(ValueError):
        marked_commands(text)


def test_the_readme_is_a_first_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 100
    assert status_block(text), "the generated status block"
    commands = [c for _, c, _ in marked_commands(text)]
    for sub in ("status", "taint", "untaint", "evacuate"):
        assert any(c.startswith(f"kubectl gpuisolate {sub} ") for c in commands), sub
    for script in ("scripts/demo", "scripts/test"):
        assert f"\n{script} " in text, script


def test_every_document_parses_and_its_links_to_docs_exist():
    for document in documents():
        text = document.read_text()
        marked_commands(text)
        for link in re.findall(r"\]\(((?:docs/|\.\./)?[\w./-]+\.md)(?:#[\w-]+)?\)", text):
            assert (document.parent / link).resolve().exists(), f"{document.name}: {link}"
