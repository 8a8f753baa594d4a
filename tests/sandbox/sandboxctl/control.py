"""The sandbox subcommands: up, down, status, env, reset."""
import json
import os
import shutil
import time
from pathlib import Path

from . import components as comp
from . import load, objects, pki, platforms, scale, versions
from .kube import ApiError, Kube
from .procs import SandboxError, State, alive, free_ports, rss_mib, stop

STATE_ENTRIES = ["state.json", "state.tmp", "pki", "logs", "pids", "etcd", "kubeconfig",
                 "components.kubeconfig", "kwok.yaml", "baseline.json", ".lock"]


def state_dir():
    return Path(os.environ.get("SANDBOX_DIR") or comp.REPO / ".sandbox").resolve()


def log(msg):
    print(f"sandbox: {msg}", flush=True)


def kube_for(state, timeout=60):
    return Kube(state.data["server"], str(state.pki / "ca.crt"), str(state.pki / "admin.crt"),
                str(state.pki / "admin.key"), timeout=timeout)


def component_report(state):
    rows = []
    for name in comp.ORDER:
        rec = state.components().get(name)
        running = bool(rec) and alive(rec)
        rows.append((name, rec, running, running and comp.healthy(state, name)))
    return rows


def is_up(state):
    return (state.exists() and state.data.get("phase") == "ready"
            and all(r[3] for r in component_report(state)))


def teardown(state):
    """Stop the processes this state started (verified by pid), remove the state."""
    stopped = []
    for name in reversed(comp.ORDER):
        rec = state.components().get(name)
        if rec and stop(rec):
            stopped.append(name)
    for entry in STATE_ENTRIES:
        p = state.root / entry
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists() or p.is_symlink():
            p.unlink()
    try:
        state.root.rmdir()
    except OSError:
        pass
    return stopped


def use_version(minor):
    """Nodes get the control plane's release as their kubelet version, as on a real cluster."""
    objects.KUBELET_VERSION = versions.full(minor)


def up(scenario=None, nodes=None, gpu_nodes=None, pods=None, k8s_version=None):
    minor = versions.wanted(k8s_version)
    if minor not in versions.available():
        raise SandboxError(f"no Kubernetes {minor} for the sandbox; choose one of "
                           f"{', '.join(versions.available())}")
    root = state_dir()
    state = State(root)
    lock = state.lock()
    try:
        state = State(root)
        params = scale.params(scenario, nodes, gpu_nodes, pods)
        if state.exists():
            if is_up(state):
                cur = state.data.get("scenario")
                running = state.data.get("k8s_version", versions.DEFAULT)
                if running != minor:
                    raise SandboxError(f"a Kubernetes {running} sandbox is already up in {root}, not "
                                       f"{minor}; run `scripts/sandbox down` first, or set SANDBOX_DIR "
                                       "to another directory")
                if (scenario and scenario != cur) or \
                        (scenario == "scale" and params != state.data.get("params")):
                    raise SandboxError(f"a sandbox with scenario {cur} is already up in {root}; "
                                       "run `scripts/sandbox down` first")
                log(f"already up and healthy (scenario {cur}); nothing changed")
                print(f"export KUBECONFIG={state.kubeconfig}")
                return 0
            log(f"found a stale or half-started sandbox in {root}; cleaning it up")
            teardown(state)
            old, lock = lock, state.lock()
            os.close(old)
        fresh = State(root)
        try:
            return _fresh_up(fresh, scenario or "seed", params, minor)
        except KeyboardInterrupt as exc:
            _stop_all(fresh)
            if fresh.exists():
                fresh.data["phase"] = "failed"
                fresh.save()
            raise SandboxError("up interrupted; stopped the components started so far "
                               "(`scripts/sandbox down` removes the state)") from exc
    finally:
        os.close(lock)


def _fresh_up(state, scenario, params, minor):
    t0 = time.time()
    use_version(minor)
    bindir = comp.binaries(minor)
    t_build = time.time() - t0
    is_scale = scenario == "scale"
    ports = dict(zip(comp.PORT_NAMES, free_ports(len(comp.PORT_NAMES))))
    state.data = {"scenario": scenario, "params": params, "k8s_version": minor,
                  "release": versions.full(minor), "phase": "starting", "bin": bindir,
                  "ports": ports, "server": f"https://127.0.0.1:{ports['kube-apiserver']}",
                  "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    state.save()
    try:
        pki.generate(state.pki)
        pki.write_kubeconfigs(state.root, state.pki, state.data["server"])
        comp.write_kwok_config(state, bindir, is_scale)
        comp.write_audit_policy(state)
        for name in ("etcd", "kube-apiserver"):
            _start(state, name, is_scale)
    except (SandboxError, OSError, RuntimeError) as e:
        return _failed(state, e)
    t_api = time.time() - t0
    kube = kube_for(state, timeout=120)
    try:
        comp.apply_rbac(state, kube)
        later = ["kube-controller-manager", "kube-scheduler", "kwok"] if is_scale else []
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            if name not in later:
                _start(state, name, is_scale)
        state.data["phase"] = "loading"
        state.save()
        t_load0 = time.time()
        if is_scale:
            scale.load(kube, params, log)
            for name in later:
                _start(state, name, is_scale)
            scale.wait(kube, params, log)
        else:
            load.load(kube, log)
            if scenario == "platforms":
                platforms.load(kube, log)
            (state.root / "baseline.json").write_text(json.dumps(load.snapshot(kube)))
        t_load = time.time() - t_load0
    except (SandboxError, ApiError, OSError) as e:
        return _failed(state, e)
    except Exception as e:  # a bug in a loader: still stop the components, one line
        return _failed(state, f"{type(e).__name__}: {e}")
    state.data["phase"] = "ready"
    state.data["timings"] = {"build_check_s": round(t_build, 1), "control_plane_s": round(t_api - t_build, 1),
                             "scenario_load_s": round(t_load, 1), "total_s": round(time.time() - t0, 1)}
    state.save()
    log(f"up (Kubernetes {versions.full(minor)}, scenario {scenario}) in {time.time() - t0:.1f}s "
        f"(apiserver ready after {t_api:.1f}s, scenario loaded in {t_load:.1f}s)")
    print(f"export KUBECONFIG={state.kubeconfig}")
    return 0


def _start(state, name, is_scale):
    """Start one component; if its port was taken meanwhile, retry once on a new port."""
    for attempt in (1, 2):
        try:
            return comp.start(state, name, is_scale)
        except SandboxError as e:
            if attempt == 2 or "in use" not in str(e):
                raise
            log(f"port clash for {name}; retrying on another port")
            keys = ["etcd", "etcd-peer"] if name == "etcd" else [name]
            state.data["ports"].update(zip(keys, free_ports(len(keys))))
            if name == "kube-apiserver":
                state.data["server"] = f"https://127.0.0.1:{state.data['ports'][name]}"
                pki.write_kubeconfigs(state.root, state.pki, state.data["server"])
            state.save()


def _stop_all(state):
    for name in reversed(comp.ORDER):
        rec = state.components().get(name)
        if rec:
            stop(rec)


def _failed(state, err):
    _stop_all(state)
    state.data["phase"] = "failed"
    state.save()
    raise SandboxError(f"up failed: {err}; logs are in {state.logs}; "
                       "`scripts/sandbox up` again cleans up and retries, "
                       "`scripts/sandbox down` removes the state")


def down():
    root = state_dir()
    if not (root / "state.json").exists() and not (root / "pids").exists():
        log(f"not up (no state in {root}); nothing to do")
        return 0
    state = State(root)
    lock = state.lock()
    try:
        stopped = teardown(State(root))
    finally:
        os.close(lock)
    log(f"stopped {', '.join(stopped) if stopped else 'nothing (no sandbox process was running)'}; "
        f"removed the state in {root}")
    return 0


def status():
    state = State(state_dir())
    if not state.exists():
        log(f"not up (no state in {state.root}); run `scripts/sandbox up`")
        return 1
    rows = component_report(state)
    phase = state.data.get("phase")
    ok = phase == "ready" and all(r[3] for r in rows)
    log(f"{'up' if ok else 'NOT healthy'} (Kubernetes {state.data.get('release', '?')}, "
        f"scenario {state.data.get('scenario')}, phase {phase}) "
        f"in {state.root}")
    for name, rec, running, good in rows:
        pid = rec["pid"] if rec else "-"
        rss = f"{rss_mib(rec)} MiB" if running else "-"
        print(f"  {name:24} pid {pid!s:>7}  {'running' if running else 'stopped':8} "
              f"{'healthy' if good else 'unhealthy':10} rss {rss:>9}  {comp.endpoint(state, name)}")
    if ok:
        print(f"export KUBECONFIG={state.kubeconfig}")
    else:
        print("  run `scripts/sandbox up` to clean up and start again")
    return 0 if ok else 1


def env():
    print(f"export KUBECONFIG={state_dir() / 'kubeconfig'}")
    return 0


def reset():
    root = state_dir()
    state = State(root)
    if not is_up(state):
        raise SandboxError(f"no healthy sandbox in {root}; run `scripts/sandbox up`")
    lock = state.lock()
    try:
        t0 = time.time()
        use_version(state.data.get("k8s_version", versions.DEFAULT))
        kube = kube_for(state)
        comp.apply_rbac(state, kube)
        if state.data.get("scenario") == "scale":
            load.restore_nodes(kube, scale.nodes(state.data["params"]))
            log("scale scenario: nodes restored (pods are not reloaded; use down + up for that)")
        else:
            baseline = json.loads((root / "baseline.json").read_text())
            new = load.reset(kube, baseline, log)
            if new is not None:
                (root / "baseline.json").write_text(json.dumps(new))
            if state.data.get("scenario") == "platforms":
                platforms.reset(kube, log)   # the seed's reset removed the platform nodes
        log(f"reset done in {time.time() - t0:.1f}s")
        return 0
    except (ApiError, OSError, ValueError) as e:
        raise SandboxError(f"reset failed: {e}; `scripts/sandbox down` then `up` starts afresh") from e
    finally:
        os.close(lock)

