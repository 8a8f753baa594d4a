"""The documentation against the plugin: the README's `status` block is what `status` prints on the
seed today (scripts/readme-status writes it), and every command in a shell block of README.md or
docs/ marked ``<!-- doctest: sandbox -->`` runs on the sandbox and ends with the exit code it
states (tests/docs_check)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from plugin import REPO

sys.path.insert(0, str(Path(REPO) / "tests"))
from docs_check import README, documents, marked_commands, status_block, without_random_suffixes  # noqa: E402


def generate_names(sandbox):
    pods = json.loads(sandbox.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    return [p["metadata"]["generateName"] for p in pods if p["metadata"].get("generateName")]


def test_the_readme_status_block_is_what_status_prints_on_the_seed(gpuisolate, seed):
    result = gpuisolate("status")
    assert result.returncode == 0, result.stderr
    recorded = status_block(README.read_text())
    assert recorded is not None, "README.md has no status block (scripts/readme-status writes it)"
    names = generate_names(seed)
    assert without_random_suffixes(recorded, names) == without_random_suffixes(result.stdout, names), \
        "README.md's status block is stale: run scripts/readme-status"


@pytest.mark.parametrize("document", [d for d in documents() if marked_commands(d.read_text())],
                         ids=lambda d: d.name)
def test_each_marked_command_runs_with_the_exit_code_it_states(gpuisolate, clean, document):
    """In order, as a reader would type them: each block may build on the lines before it."""
    for number, command, expected in marked_commands(document.read_text()):
        result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300,
                                env=gpuisolate.env(), cwd=REPO)
        where = f"{document.name}:{number}: {command}"
        assert result.returncode == expected, f"{where}\nexit {result.returncode}\n{result.stderr[-2000:]}"
        assert "Traceback" not in result.stderr, where
