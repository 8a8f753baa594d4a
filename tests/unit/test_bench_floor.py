"""scripts/bench_floor.py's arithmetic on plain events: a budget's cycle from the watch, the
plugin's share of it from its -v=6 log, and the refused requests."""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import bench_floor as bf  # noqa: E402
import bench_report  # noqa: E402


def test_a_budget_allows_again_only_after_it_was_seen_allowing_none():
    events = [(1.0, "pdb", "app-00", 1), (2.0, "pdb", "app-01", 0), (2.1, "pdb", "app-00", 0),
              (3.0, "pdb", "app-01", 1), (4.0, "pdb", "app-00", 1), (5.0, "pdb", "app-00", 1)]
    assert bf.allowing_again(events, "app-00", after=2.0) == 4.0
    # the budget's 0 may arrive before the pod's deletion is seen
    assert bf.allowing_again(events, "app-00", after=2.5) == 4.0
    assert bf.allowing_again(events, "app-00", after=4.5) is None
    assert bf.allowing_again(events, "app-01", after=0.0) == 3.0


WATCHED = [
    (0.0, "pod", "app-00-00", "ready"), (0.0, "pod", "app-00-01", "ready"), (0.0, "pdb", "app-00", 1),
    (10.0, "pdb", "app-00", 0), (10.1, "pod", "app-00-00", "deleting"),
    (10.2, "pod", "app-00-x1", "seen"), (12.0, "pod", "app-00-x1", "ready"), (12.5, "pdb", "app-00", 1),
    (12.6, "pdb", "app-00", 0), (12.7, "pod", "app-00-01", "deleting"),
    (13.0, "pod", "app-00-x2", "ready"), (14.7, "pdb", "app-00", 1),
]


def test_each_accepted_eviction_is_a_cycle_to_a_new_pod_ready_and_the_budget_allowing():
    cycles = bf.cycles_of(WATCHED, start=5.0)
    assert [(b, a, r, g) for b, a, r, g in cycles] == [("app-00", 10.1, 12.0, 12.5),
                                                       ("app-00", 12.7, 13.0, 14.7)]
    assert bf.cycles_of(WATCHED, start=13.0) == []     # pods seen before the start are not new


def log_line(stamp, name, status, millis):
    clock = time.strftime("%m%d %H:%M:%S", time.localtime(stamp)) + f".{int(stamp % 1 * 1e6):06d}"
    return (f'I{clock}   12345 round_trippers.go:632] "Response" verb="POST" '
            f'url="https://127.0.0.1:6443/api/v1/namespaces/gpuisolate-bench/pods/{name}/eviction" '
            f'status="{status} X" milliseconds={millis}')


def test_requests_are_read_with_the_time_they_were_sent():
    base = time.time() // 1
    text = "\n".join([log_line(base + 1.5, "app-00-00", 201, 250), "I1207 progress line",
                      log_line(base + 2.0, "app-00-01", 429, 1000)])
    sent = bf.requests_of(text)
    assert [(round(t - base, 3), n, s) for t, n, s in sent] == [(1.25, "app-00-00", 201),
                                                                 (1.0, "app-00-01", 429)]


def test_a_run_gives_its_cycles_shares_refusals_and_first_eviction():
    requests = [(9.0, "app-00-00", 201), (12.2, "app-00-01", 429), (12.55, "app-00-01", 201)]
    figures = bf.run_figures(WATCHED, requests, start=5.0)
    assert figures["cycles"] == [12.5 - 10.1, 14.7 - 12.7]
    assert [round(x, 3) for x in figures["ready"]] == [1.9, 0.3]
    # the next accepted request's sending, less the allowing seen; the refused one is no share
    assert [round(x, 3) for x in figures["shares"]] == [0.05]
    assert (figures["requests"], figures["refused"], figures["first"]) == (3, 1, 4.0)


def test_quantiles_of_nothing_are_nan_and_of_values_their_rank():
    assert bench_report._quantile([5, 1, 3, 2, 4], 0.9) == 5 and bench_report._quantile([1, 2], 0.0) == 1
    assert bench_report._med([]) != bench_report._med([])


def test_the_recorder_takes_kubectls_first_list_a_page_at_a_time():
    recorder = bf.Recorder.__new__(bf.Recorder)
    recorder.events, recorder._lock = [], threading.Lock()
    page = {"type": "ADDED", "object": {"kind": "PodList", "items": [
        {"metadata": {"name": "app-00-00"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "app-00-01", "deletionTimestamp": "x"}}]}}
    recorder._note(1.0, page)
    recorder._note(2.0, {"type": "MODIFIED", "object": {"kind": "PodDisruptionBudget",
                                                         "metadata": {"name": "app-00"}, "status": {}}})
    recorder._note(3.0, {"type": "DELETED", "object": {"kind": "Pod", "metadata": {"name": "app-00-01"}}})
    assert recorder.events == [(1.0, "pod", "app-00-00", "ready"), (1.0, "pod", "app-00-01", "deleting"),
                               (2.0, "pdb", "app-00", 0)]
