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
BUDGETS = {"seed": 1.0, "scale": 0.5, "rss_mb": 150.0, "evacuate": 1.0,
           "limit": 0.1, "limit_rss_mb": 100.0, "limit_server_cpu": 0.3, "limit_evacuate": 0.3,
           "limit_floor": 1.15}


def _med(values):
    return statistics.median(values) if values else float("nan")


def _quantile(values, q):
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] if ordered else float("nan")


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
        self.limit_row = self.limit_evac = None
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
    def status(self, kind, label, samples, nodes=None, load=None, floor=None, requests=None):
        """``requests``: {side: API requests of one run}, when counted."""
        self.status_rows.append(dict(kind=kind, label=label, samples=samples, nodes=nodes, load=load or {},
                                     requests=requests))
        if floor:
            self.floor = (label, floor)

    def limit(self, label, samples, idle, load):
        """Samples of (wall, RSS, lines, API server CPU s, requests); ``idle``: the server's
        (CPU s/s, requests/s) without a command, taken off each sample for its wall time."""
        self.limit_row = dict(label=label, samples=samples, idle=idle, load=load)

    def limit_evacuate(self, label, samples, floor=None):
        """Samples of (wall, GPU pods restarted) per side, as measure() returns them; ``floor``:
        bench_floor's cycles alone, the plugin's runs' figures and the cycles per budget."""
        self.limit_evac = dict(label=label, samples=samples, floor=floor)

    def limit_evacuate_lines(self):
        """(its summary row, its detail line), or ([], [])."""
        if not self.limit_evac:
            return [], []
        row, s = self.limit_evac, self.limit_evac["samples"]
        p, k = self._stat(s, "plugin"), self._stat(s, "kubectl")
        summary = [f"| `evacuate --taint-first --parallel-nodes 4` vs `drain` + `uncordon`, {row['label']} | "
                   f"{_s(p)} | {_s(k)} | {p / k:.2f}× | ≤ {BUDGETS['limit_evacuate']}× | "
                   f"{self._verdict(p / k, BUDGETS['limit_evacuate'])} |"]
        details = [f"- limit evacuate, {row['label']}: min / median / max of {len(s['plugin'])} runs: "
                   + "; ".join(f"{side} {self._spread([v[0] for v in s[side]])} s, GPU pods restarted "
                               f"{max(v[1] for v in s[side])} at most" for side in ("plugin", "kubectl"))]
        if row["floor"]:
            floor = row["floor"]
            rows, more = _floor_lines(floor["cycles"], floor["runs"], [v[0] for v in s["plugin"]],
                                                  floor["per_budget"], self._verdict, BUDGETS["limit_floor"])
            summary, details = summary + rows, details + more
        return summary, details

    @staticmethod
    def _spread(values):
        return f"{min(values):.2f} / {_med(values):.2f} / {max(values):.2f}"

    def _idle(self, sample):
        """The background (CPU s/s, requests/s) taken off a sample: measured just before it
        where the sample says, else the run's one idle figure."""
        return sample[5:7] if len(sample) >= 7 else self.limit_row["idle"]

    def _net_cpu(self, sample):
        return max(sample[3] - self._idle(sample)[0] * sample[0], 0.0)

    def _net_requests(self, sample):
        return max(sample[4] - self._idle(sample)[1] * sample[0], 0.0)

    def limit_summary(self):
        if not self.limit_row:
            return []
        row, s = self.limit_row, self.limit_row["samples"]
        p, k = self._stat(s, "plugin"), self._stat(s, "kubectl")
        pr, kr = self._peak(s, "plugin"), self._peak(s, "kubectl")
        pc = _med([self._net_cpu(x) for x in s["plugin"]])
        kc = _med([self._net_cpu(x) for x in s["kubectl"]])
        pq = _med([self._net_requests(x) for x in s["plugin"]])
        kq = _med([self._net_requests(x) for x in s["kubectl"]])
        label = row["label"]
        return [
            f"| `status` vs the kubectl pair, {label} | {_s(p)} | {_s(k)} | {p / k:.2f}× | "
            f"≤ {BUDGETS['limit']}× | {self._verdict(p / k, BUDGETS['limit'])} |",
            f"| peak RSS, {label} | {pr:.0f} MB | {kr:.0f} MB | {pr / kr:.2f}× | "
            f"≤ {BUDGETS['limit_rss_mb']:.0f} MB | {self._verdict(pr, BUDGETS['limit_rss_mb'])} |",
            f"| API server CPU per command (net of idle), {label} | {pc:.2f} s | {kc:.2f} s | "
            f"{pc / kc if kc else float('nan'):.2f}× | ≤ {BUDGETS['limit_server_cpu']}× | "
            f"{self._verdict(pc / kc if kc else float('inf'), BUDGETS['limit_server_cpu'])} |",
            f"| API server requests per command (net of idle), {label} | {pq:.0f} | {kq:.0f} | "
            f"{pq / kq if kq else float('nan'):.2f}× | | |"]

    def limit_details(self):
        if not self.limit_row:
            return []
        row, s = self.limit_row, self.limit_row["samples"]
        idles = [self._idle(v) for side in ("plugin", "kubectl") for v in s[side]]
        lines = [f"- limit, {row['label']}: API server idle {row['idle'][0]:.3f} CPU s/s and "
                 f"{row['idle'][1]:.1f} requests/s at the start; the background taken off each "
                 f"command for its wall time, measured just before it: "
                 f"{self._spread([i[0] for i in idles])} CPU s/s, "
                 f"{self._spread([i[1] for i in idles])} requests/s; min / median / max of "
                 f"{len(s['plugin'])} runs:"]
        for side in ("plugin", "kubectl"):
            x = s[side]
            lines.append(f"  - {side}: wall {self._spread([v[0] for v in x])} s; peak RSS "
                         f"{self._spread([v[1] for v in x])} MB; API server CPU "
                         f"{self._spread([self._net_cpu(v) for v in x])} s; requests "
                         f"{self._spread([self._net_requests(v) for v in x])}")
        if row["load"].get("scenario_load_s"):
            lines.append(f"  - sandbox load: scenario {row['load']['scenario_load_s']:.0f} s")
        return lines

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
            if row.get("requests"):
                pq, kq = row["requests"]["plugin"], row["requests"]["kubectl"]
                lines.append(f"| API requests per command (-v=6), {row['label']} | {pq} | {kq} | "
                             f"{pq / kq if kq else float('nan'):.2f}× | | |")
        for row in self.evac_rows:
            if not row["main"]:
                continue
            p, k = self._stat(row["samples"], "plugin"), self._stat(row["samples"], "kubectl")
            lines.append("| `evacuate --taint-first` vs `drain` + `uncordon`, "
                         f"2 GPU nodes × {row['pods']} pods | "
                         f"{_s(p)} | {_s(k)} | {p / k:.2f}× | ≤ {BUDGETS['evacuate']}× | "
                         f"{self._verdict(p / k, BUDGETS['evacuate'])} |")
            pg = max(s[1] for s in row["samples"]["plugin"])
            kg = max(s[1] for s in row["samples"]["kubectl"])
            lines.append(f"| GPU pods restarted per run (most in any run) | {pg} | {kg} | | 0 | "
                         f"{self._verdict(pg, 0)} |")
        return lines + self.limit_summary() + self.limit_evacuate_lines()[0]

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
        lines += self.limit_details() + self.limit_evacuate_lines()[1]
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


def _floor_lines(floor, runs, plugin_walls, cycles, verdict, budget):
    """(summary rows, detail lines): the plugin against the floor model, ``cycles`` × one budget's
    cycle alone + the first eviction's latency (medians), its share of a cycle and its refusals."""
    floor_cycle = _med(floor)
    first = _med([r["first"] for r in runs if r["first"] is not None])
    model, plugin = cycles * floor_cycle + first, _med(plugin_walls)
    shares = [s * 1000 for r in runs for s in r["shares"]]
    in_run = [c for r in runs for c in r["cycles"]]
    ready = [c for r in runs for c in r["ready"]]
    refused, requests = sum(r["refused"] for r in runs), sum(r["requests"] for r in runs)
    refused_pc = 100.0 * refused / requests if requests else float("nan")
    rows = [f"| `evacuate` vs the floor: {cycles} × one budget's cycle ({floor_cycle:.2f} s) + the first "
            f"eviction ({first:.2f} s) | {plugin:.2f} s | {model:.2f} s | {plugin / model:.2f}× "
            f"| ≤ {budget}× | {verdict(plugin / model, budget)} |",
            f"| the plugin's share of a cycle (budget seen allowing → its next accepted eviction sent) | "
            f"{_med(shares):.0f} ms | | | ≤ 50 ms | {verdict(_med(shares), 50)} |",
            f"| eviction requests refused | {refused_pc:.1f} % | | | < 10 % | {verdict(refused_pc, 10)} |"]
    details = [f"- limit evacuate, the floor: one budget's cycle alone (eviction accepted → budget "
               f"allowing again) min / median / max {min(floor):.2f} / {floor_cycle:.2f} / "
               f"{max(floor):.2f} s "
               f"over {len(floor)} cycles; under the plugin's runs, every budget at once: median "
               f"{_med(in_run):.2f} s over {len(in_run)} cycles, of which accepted → a replacement Ready "
               f"{_med(ready):.2f} s; the plugin's share median / p90 / max {_med(shares):.0f} / "
               f"{_quantile(shares, 0.9):.0f} / {max(shares, default=float('nan')):.0f} ms "
               f"over {len(shares)}; "
               f"eviction requests refused {refused} of {requests}; per run (refused / requests, first "
               f"eviction): " + ", ".join(f"{r['refused']} / {r['requests']}, {r['first']:.2f} s"
                                          for r in runs if r["first"] is not None)]
    return rows, details
