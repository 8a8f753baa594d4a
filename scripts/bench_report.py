"""Results of scripts/bench: the summary against the budgets, the growth tables, the raw samples,
the machine and the versions; printed as markdown and written between markers into a results file
(text outside the markers, such as notes and profiles, is kept)."""
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench:begin (written by scripts/bench; edit outside) -->", "<!-- bench:end -->"
BUDGETS = {"seed": 1.5, "scale": 0.5, "rss_mb": 150.0, "evacuate": 1.0}


def _med(values):
    return statistics.median(values) if values else float("nan")


def _s(value):
    return f"{value:.2f} s"


def _machine():
    model, mem_kb = "", 0
    try:
        model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                      if line.startswith("model name")), "")
        mem_kb = next((int(line.split()[1]) for line in open("/proc/meminfo")
                       if line.startswith("MemTotal")), 0)
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model or platform.processor() or '?'}), {mem_kb / 1048576:.1f} GiB RAM"


class Report:
    def __init__(self, quick):
        self.quick = quick
        self.status_rows, self.evac_rows, self.version_info = [], [], {}
        self.floor = None

    def start(self, python, kubectl):
        self.date = time.strftime("%Y-%m-%d %H:%M %Z")
        self.load_start = os.getloadavg()
        self.machine = _machine()
        self.python, self.kubectl = python, kubectl
        self.started = time.monotonic()

    def finish(self):
        self.load_end = os.getloadavg()
        self.minutes = (time.monotonic() - self.started) / 60

    def versions(self, env, sandbox):
        if self.version_info.get("server"):
            return
        code = "import sys, kubectl_gpuisolate as k; print(k.__version__, sys.version.split()[0])"
        out = subprocess.run([self.python, "-c", code], capture_output=True, text=True,
                             env=dict(env, PYTHONPATH=str(REPO))).stdout.split()
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "kubectl_gpuisolate"],
                               capture_output=True, text=True).stdout.strip()
        try:
            kv = json.loads(subprocess.run([self.kubectl, "version", "-o", "json"], capture_output=True,
                                           text=True, env=env).stdout or "{}")
        except ValueError:
            kv = {}
        self.version_info = {
            "plugin": f"{out[0] if out else '?'} (checkout {commit or '?'}{', modified' if dirty else ''})",
            "python": out[1] if len(out) > 1 else "?",
            "kubectl": (kv.get("clientVersion") or {}).get("gitVersion", "?"),
            "server": (kv.get("serverVersion") or {}).get("gitVersion", ""),
        }

    # -- recording --------------------------------------------------------------------------------
    def status(self, kind, label, samples, nodes=None, load=None, floor=None):
        self.status_rows.append(dict(kind=kind, label=label, samples=samples, nodes=nodes, load=load or {}))
        if floor:
            self.floor = (label, floor)

    def evacuate(self, pods, samples, main):
        self.evac_rows.append(dict(pods=pods, samples=samples, main=main))

    # -- rendering --------------------------------------------------------------------------------
    @staticmethod
    def _stat(samples, side, index=0):
        return _med([s[index] for s in samples[side]])

    @staticmethod
    def _peak(samples, side):
        return max((s[1] for s in samples[side]), default=float("nan"))

    def _verdict(self, value, budget):
        if self.quick:
            return "(quick run: not judged)"
        return "**met**" if value <= budget else "**missed**"

    def summary(self):
        lines = ["| measurement | plugin | kubectl | ratio | budget | verdict |", "|---|---|---|---|---|---|"]
        for row in self.status_rows:
            if row["kind"] not in ("seed", "scale"):
                continue
            p, k = self._stat(row["samples"], "plugin"), self._stat(row["samples"], "kubectl")
            budget = BUDGETS[row["kind"]]
            lines.append(f"| `status` vs the kubectl pair, {row['label']} | {_s(p)} | {_s(k)} | "
                         f"{p / k:.2f}× | ≤ {budget}× | {self._verdict(p / k, budget)} |")
            if row["kind"] == "scale":
                pr, kr = self._peak(row["samples"], "plugin"), self._peak(row["samples"], "kubectl")
                lines.append(f"| peak RSS, {row['label']} | {pr:.0f} MB | {kr:.0f} MB | {pr / kr:.2f}× | "
                             f"≤ {BUDGETS['rss_mb']:.0f} MB | {self._verdict(pr, BUDGETS['rss_mb'])} |")
        for row in self.evac_rows:
            if not row["main"]:
                continue
            p, k = self._stat(row["samples"], "plugin"), self._stat(row["samples"], "kubectl")
            lines.append(f"| `evacuate --taint` vs `drain` + `uncordon`, 2 GPU nodes × {row['pods']} pods | "
                         f"{_s(p)} | {_s(k)} | {p / k:.2f}× | ≤ {BUDGETS['evacuate']}× | "
                         f"{self._verdict(p / k, BUDGETS['evacuate'])} |")
            pg = max(s[1] for s in row["samples"]["plugin"])
            kg = max(s[1] for s in row["samples"]["kubectl"])
            lines.append(f"| GPU pods restarted per run (most in any run) | {pg} | {kg} | | 0 | "
                         f"{self._verdict(pg, 0)} |")
        return lines

    def growth(self):
        lines = []
        rows = sorted((r for r in self.status_rows if r["nodes"]), key=lambda r: r["nodes"])
        if rows:
            lines += ["", "**`status` as the cluster grows** (10% of the nodes with GPUs)", "",
                      "| cluster | plugin | kubectl pair | ratio | plugin peak RSS | kubectl peak RSS "
                      "| sandbox load |",
                      "|---|---|---|---|---|---|---|"]
            for r in rows:
                s = r["samples"]
                p, k = self._stat(s, "plugin"), self._stat(s, "kubectl")
                load = r["load"].get("scenario_load_s")
                lines.append(f"| {r['label']} | {_s(p)} | {_s(k)} | {p / k:.2f}× "
                             f"| {self._peak(s, 'plugin'):.0f} MB | {self._peak(s, 'kubectl'):.0f} MB "
                             f"| {f'{load:.0f} s' if load else '?'} |")
        if self.evac_rows:
            lines += ["", "**`evacuate` as nodes get fuller** (2 GPU nodes)", "",
                      "| pods per node | plugin | drain + uncordon | ratio "
                      "| GPU pods restarted (plugin / kubectl) |",
                      "|---|---|---|---|---|"]
            for r in sorted(self.evac_rows, key=lambda r: r["pods"]):
                s = r["samples"]
                p, k = self._stat(s, "plugin"), self._stat(s, "kubectl")
                lines.append(f"| {r['pods']} | {_s(p)} | {_s(k)} | {p / k:.2f}× | "
                             f"{max(x[1] for x in s['plugin'])} / {max(x[1] for x in s['kubectl'])} |")
        return lines

    def details(self):
        lines = ["", "<details><summary>every sample (seconds; MB)</summary>", ""]
        for r in self.status_rows:
            for side in ("plugin", "kubectl"):
                walls = ", ".join(f"{w:.2f}" for w, _, _ in r["samples"][side])
                rss = ", ".join(f"{m:.0f}" for _, m, _ in r["samples"][side])
                lines.append(f"- status {r['label']}, {side}: {walls} s; peak RSS {rss} MB")
        for r in self.evac_rows:
            for side in ("plugin", "kubectl"):
                walls = ", ".join(f"{w:.2f}" for w, _ in r["samples"][side])
                lines.append(f"- evacuate {r['pods']} pods/node, {side}: {walls} s")
        if self.floor:
            label, floor = self.floor
            lines.append(f"- API server alone, {label}: one unpaginated `kubectl get --raw /api/v1/nodes` "
                         f"{_s(floor['nodes'])}, `kubectl get --raw /api/v1/pods` {_s(floor['pods'])} "
                         "(best of 2)")
        for r in self.status_rows:
            if r["load"].get("scenario_load_s"):
                t = r["load"]
                lines.append(f"- sandbox load, {r['label']}: scenario {t['scenario_load_s']:.0f} s, "
                             f"whole `scripts/sandbox up` {t.get('total_s', 0):.0f} s")
        lines += ["", "</details>"]
        return lines

    def header(self):
        v = self.version_info
        la = lambda t: " ".join(f"{x:.2f}" for x in t)  # noqa: E731
        return [f"Run {self.date}{' (--quick)' if self.quick else ''}, {self.minutes:.0f} min.",
                f"Machine: {self.machine}; load average {la(self.load_start)} at the start, "
                f"{la(self.load_end)} at the end.",
                f"Versions: kubectl-gpuisolate {v.get('plugin', '?')} on Python {v.get('python', '?')}; "
                f"kubectl {v.get('kubectl', '?')}; API server {v.get('server') or '?'} (sandbox).", ""]

    def table(self):
        return "\n".join(self.header() + self.summary() + self.growth() + self.details()) + "\n"

    def write(self, path):
        path = Path(path)
        block = f"{BEGIN}\n{self.table()}{END}"
        text = path.read_text() if path.exists() else ""
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            text = head + block + rest.split(END, 1)[1]
        else:
            text = ("# Benchmarks\n\n`scripts/bench` runs the plugin and the kubectl commands it replaces "
                    "side by side on the sandbox.\n\n" + block + "\n")
        path.write_text(text)
