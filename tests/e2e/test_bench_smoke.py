"""scripts/bench --quick runs end to end and prints its results table.

A smoke test of the benchmark's machinery (sandboxes, the evacuate workload and its
reset, the alternating runs, the report), not of speed: no timing is asserted.  It
uses its own sandbox directories under .cache/, which the bench starts and stops."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIRS = {"--seed-dir": REPO / ".cache" / "sb-bench-smoke-seed",
        "--scale-dir": REPO / ".cache" / "sb-bench-smoke-scale",
        "--limit-dir": REPO / ".cache" / "sb-bench-smoke-limit"}


def _down(directory):
    subprocess.run([str(REPO / "scripts" / "sandbox"), "down"], capture_output=True,
                   env=dict(os.environ, SANDBOX_DIR=str(directory)), timeout=300)


# About 2 min measured on 2 cores (the limit phase at 100 nodes 30 s of it); bounded by its own
# timeouts: 900 s for the bench, 300 s for each `down`.
@pytest.mark.timeout(1500)
def test_bench_quick_prints_the_table(tmp_path):
    results = tmp_path / "benchmarks.md"
    cmd = [sys.executable, str(REPO / "scripts" / "bench"), "--quick", "--python", sys.executable,
           "--write", str(results), "--only", "seed,evacuate,growth,scale,limit"]
    for flag, directory in DIRS.items():
        cmd += [flag, str(directory)]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    finally:
        for directory in DIRS.values():   # normally already down: the bench stops what it starts
            _down(directory)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "| measurement | plugin | kubectl | ratio | budget | verdict |" in out
    for row in ("`status` vs the kubectl pair, seed", "`status` vs the kubectl pair, 100 nodes",
                "peak RSS, 100 nodes", "`evacuate --taint-first` vs `drain` + `uncordon`",
                "GPU pods restarted per run", "API server CPU per command (net of idle), 100 nodes",
                "API server requests per command (net of idle), 100 nodes",
                "`evacuate --taint-first --parallel-nodes 4` vs `drain` + `uncordon`, 2 GPU nodes × 3 pods",
                "`evacuate` vs the floor: 2 × one budget's cycle", "the plugin's share of a cycle",
                "eviction requests refused"):
        assert row in out, row
    assert "Versions: kubectl-gpuisolate" in out and "Machine:" in out
    assert "(quick run: not judged)" in out
    written = results.read_text()
    assert "<!-- bench:begin" in written and "<!-- bench:end -->" in written
    for directory in DIRS.values():
        assert not (directory / "state.json").exists(), f"{directory} was left running"
