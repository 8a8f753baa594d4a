"""status, taint and untaint against the seed sandbox, through real kubectl
plugin discovery, compared with what real kubectl prints and stores."""

import json
import threading

import pytest
from sandbox_helpers import GPU_NODES, ROOK_PINNED, app_name

COLUMNS = ("custom-columns=NAME:.metadata.name,GPU_PRESENT:.metadata.labels.nvidia\\.com/gpu\\.present,"
           "TAINTS:.spec.taints")


def node_table(text):
    """The status output up to its first blank line: the custom-columns view."""
    return text.split("\n\n", 1)[0] + "\n"


def node_json(sandbox, name):
    return json.loads(sandbox.kubectl("get", "node", name, "-o", "json").stdout)


@pytest.mark.window
def test_node_table_is_byte_identical_to_kubectl(gpuisolate, seed):
    """The seed's own command (seed-scenario.md step 3), over every node, byte for byte."""
    result = gpuisolate("status")
    assert result.returncode == 0, result.stderr
    expected = seed.kubectl("get", "nodes", "-o", COLUMNS).stdout
    assert node_table(result.stdout) == expected
    assert "true" in expected and "<none>" in expected
    assert "node-role.kubernetes.io/control-plane" in expected      # the rest of the cluster too
    selected = gpuisolate("status", "-l", "nvidia.com/gpu.present=true")
    assert node_table(selected.stdout) == seed.kubectl(
        "get", "nodes", "-l", "nvidia.com/gpu.present=true", "-o", COLUMNS).stdout


def test_a_gpu_taint_on_a_node_without_gpus_is_flagged(gpuisolate, clean):
    names = clean.kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    cpu = [n for n in names if "-md-0-" in n][0]
    clean.kubectl("taint", "node", cpu, "nvidia.com/gpu=true:NoSchedule")
    result = gpuisolate("status")
    assert result.returncode == 0, result.stderr
    assert (f"Warning: node/{cpu} has no GPU signal but carries the GPU taint "
            f"nvidia.com/gpu=true:NoSchedule; remove it with 'kubectl gpuisolate untaint {cpu}'"
            in result.stderr)
    assert gpuisolate("untaint", cpu).returncode == 0
    assert "has no GPU signal" not in gpuisolate("status").stderr


def test_node_table_covers_labels_and_taint_shapes(gpuisolate, clean):
    names = clean.kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    cpu = [n for n in names if "-md-0-" in n][0]
    # several taints on one node, with and without a value (PreferNoSchedule: no eviction side effects)
    clean.kubectl("taint", "node", cpu, "example.com/a=x:PreferNoSchedule", "example.com/b:PreferNoSchedule")
    result = gpuisolate("status", *names)
    assert result.returncode == 0, result.stderr
    expected = clean.kubectl("get", "nodes", *names, "-o", COLUMNS).stdout
    assert node_table(result.stdout) == expected
    assert "map[effect:PreferNoSchedule key:example.com/b]" in expected          # no value
    assert "node-role.kubernetes.io/control-plane" in expected                   # control plane taint
    assert expected.count("<none>") >= 2                                         # no label, no taint


@pytest.mark.window
def test_status_names_the_misplaced_pods(gpuisolate, seed):
    result = gpuisolate("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schemaVersion"] == "gpuisolate.status/v1"
    assert [n["name"] for n in doc["nodes"]] == GPU_NODES
    pods = {(p["namespace"], p["name"]): p for n in doc["nodes"] for p in n["pods"]}
    # Independent oracle from kubectl's own view of the GPU nodes.
    listed = json.loads(seed.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    on_gpu = [p for p in listed if p["spec"].get("nodeName") in GPU_NODES]
    assert {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in on_gpu} == set(pods)
    for pod in on_gpu:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        owner = next((o for o in pod["metadata"].get("ownerReferences", []) if o.get("controller")), {})
        verdict = pods[key]["verdict"]
        if owner.get("kind") == "DaemonSet":
            assert (verdict, pods[key]["reason"]) == ("stay", "daemonset"), key
        elif pod["metadata"]["name"].startswith("llama32-iep-predictor"):
            assert (verdict, pods[key]["reason"]) == ("stay", "gpu-request"), key
        elif pod["status"].get("phase") in ("Succeeded", "Failed"):
            assert pods[key]["reason"] == "finished", key
        elif app_name(pod) in ROOK_PINNED:       # pinned to GPU B by hostname or by a local PV
            assert (verdict, pods[key]["reason"]) == ("stay", "nowhere-to-land"), key
        elif not any(t.get("key") in ("nvidia.com/gpu", None, "") and t.get("operator") == "Exists"
                     for t in pod["spec"].get("tolerations", [])):
            assert verdict in ("move", "blocked"), key
    assert any(p["verdict"] in ("move", "blocked") for p in pods.values())
    assert any(n["name"] == "nai-db-0" and n["verdict"] in ("move", "blocked") for n in pods.values())
    assert [n["summary"]["nowhereToLand"] for n in doc["nodes"]] == [0, len(ROOK_PINNED)]


def test_status_text_and_exit_code(gpuisolate, seed):
    result = gpuisolate("status", "--exit-code")
    assert result.returncode == 1, result.stderr        # seed: untainted GPU nodes, misplaced pods
    assert "would move" in result.stdout and "nai-db-0" in result.stdout
    # By default only the pods that need attention: the inference pod (it tolerates) and the
    # DaemonSet pods are counted, not listed; --all-pods and -o wide list them.
    assert "llama32-iep-predictor" not in result.stdout and "cilium-" not in result.stdout
    for argv in (["--all-pods"], ["-o", "wide"]):
        every = gpuisolate("status", *argv).stdout
        assert "llama32-iep-predictor" in every and "cilium-" in every, argv
    for name in GPU_NODES:
        gpus = node_json(seed, name)["status"]["capacity"]["nvidia.com/gpu"]
        assert f"node/{name}: {gpus} GPU, GPU taint absent;" in result.stdout


@pytest.mark.window
def test_taint_then_untaint_restores_nodes_exactly(gpuisolate, clean):
    before = {n: node_json(clean, n) for n in GPU_NODES}
    tainted = gpuisolate("taint")
    assert tainted.returncode == 0, tainted.stderr
    assert tainted.stdout.splitlines() == [f"node/{n} tainted" for n in GPU_NODES]
    for n in GPU_NODES:
        taints = node_json(clean, n)["spec"]["taints"]
        assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in taints
    status = gpuisolate("status", "-o", "json")
    assert all(node["gpuTainted"] for node in json.loads(status.stdout)["nodes"])
    again = gpuisolate("taint")
    assert again.stdout.splitlines() == [f"node/{n} already tainted" for n in GPU_NODES]
    untainted = gpuisolate("untaint")
    assert untainted.returncode == 0, untainted.stderr
    assert untainted.stdout.splitlines() == [f"node/{n} untainted" for n in GPU_NODES]
    for n in GPU_NODES:
        after = node_json(clean, n)
        assert after["spec"] == before[n]["spec"]
        assert after["metadata"]["labels"] == before[n]["metadata"]["labels"]
    absent = gpuisolate("untaint")
    assert absent.returncode == 0
    assert absent.stdout.splitlines() == [f"node/{n} not tainted" for n in GPU_NODES]


def test_taint_already_present_writes_nothing(gpuisolate, clean):
    assert gpuisolate("taint").returncode == 0
    versions = {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES}
    assert gpuisolate("taint").returncode == 0
    assert {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES} == versions


def test_other_value_needs_overwrite(gpuisolate, clean):
    assert gpuisolate("taint").returncode == 0
    refused = gpuisolate("taint", "--taint", "nvidia.com/gpu=present:NoSchedule")
    assert refused.returncode == 7
    assert len(refused.stderr.strip().splitlines()) == 1 and "--overwrite" in refused.stderr
    assert all(node_json(clean, n)["spec"]["taints"][-1]["value"] == "true" for n in GPU_NODES)
    modified = gpuisolate("taint", "--taint", "nvidia.com/gpu=present:NoSchedule", "--overwrite")
    assert modified.stdout.splitlines() == [f"node/{n} modified" for n in GPU_NODES]
    assert all(node_json(clean, n)["spec"]["taints"][-1]["value"] == "present" for n in GPU_NODES)


@pytest.mark.window
@pytest.mark.parametrize("mode,suffix", [("client", "(dry run)"), ("server", "(server dry run)")])
def test_dry_runs_write_nothing(gpuisolate, clean, mode, suffix):
    def versions():
        return {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES}

    untainted = versions()
    result = gpuisolate("taint", f"--dry-run={mode}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"node/{n} tainted {suffix}" for n in GPU_NODES]
    assert versions() == untainted
    assert gpuisolate("taint").returncode == 0
    tainted = versions()
    assert all(tainted[n] != untainted[n] for n in GPU_NODES)     # a real write shows up here
    result = gpuisolate("untaint", f"--dry-run={mode}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"node/{n} untainted {suffix}" for n in GPU_NODES]
    assert versions() == tainted


def test_concurrent_writer_never_loses_a_taint(gpuisolate, clean):
    """Another (guarded) writer adds taints while the plugin taints and untaints."""
    node = GPU_NODES[0]
    added, errors = [], []

    def writer():
        for i in range(12):
            key = f"writer.example.com/k{i}"
            for _ in range(50):
                current = node_json(clean, node)
                current["spec"].setdefault("taints", []).append({"key": key, "effect": "PreferNoSchedule"})
                # replace sends the resourceVersion: a guarded write, retried on conflict
                done = clean.kubectl("replace", "-f", "-", input=json.dumps(current), check=False)
                if done.returncode == 0:
                    added.append(key)
                    break
                if "the object has been modified" not in done.stderr:
                    errors.append(done.stderr)
                    return

    thread = threading.Thread(target=writer)
    thread.start()
    rounds = 0
    while thread.is_alive() or rounds < 6:
        op = "taint" if rounds % 2 == 0 else "untaint"
        result = gpuisolate(op, node)
        assert result.returncode == 0, result.stderr
        rounds += 1
    thread.join()
    assert not errors, errors
    final = gpuisolate("taint", node)
    assert final.returncode == 0
    taints = node_json(clean, node)["spec"]["taints"]
    keys = [t["key"] for t in taints]
    assert sorted(k for k in keys if k.startswith("writer.")) == sorted(added) and len(added) == 12
    assert "nvidia.com/gpu" in keys
