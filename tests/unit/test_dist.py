"""The distribution's static parts, without building: the krew manifests follow
krew's validation rules and the krew-index conventions and agree with each
other and with setup.cfg; the lock file matches install_requires; the zipapp's
__main__ guard parses on old Pythons and answers them in one line."""

import ast
import io
import os
import re
import runpy
import sys
from contextlib import redirect_stderr

import pytest
import yaml

from kubectl_gpuisolate import __version__

from .conftest import REPO

NAME = "kubectl-gpuisolate"
ARCHIVE = f"{NAME}-v{__version__}.tar.gz"
PLATFORMS = {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")}


def load(relative):
    with open(os.path.join(REPO, relative), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def plugin():
    return yaml.safe_load(load("plugin.yaml"))


def test_manifest_identity(plugin):
    assert plugin["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert plugin["kind"] == "Plugin"
    assert plugin["metadata"]["name"] == "gpuisolate"
    assert re.fullmatch(r"[\w-]+", plugin["metadata"]["name"], re.ASCII)
    assert plugin["spec"]["version"] == f"v{__version__}"
    assert re.fullmatch(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)", plugin["spec"]["version"])
    assert plugin["spec"]["homepage"].startswith("https://")


def test_manifest_texts(plugin):
    spec = plugin["spec"]
    short = spec["shortDescription"]
    assert short and "\n" not in short and "\r" not in short and len(short) <= 50
    for line in spec["description"].splitlines():
        assert len(line) <= 80, line
    assert "Usage" not in spec["description"] and "--" not in spec["description"]
    caveats = spec["caveats"]
    assert "python3 >= 3.9" in caveats
    assert "SHIV_ROOT" in caveats
    assert 'ln -s kubectl-gpuisolate "${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-gpuisolate"' in caveats


def test_manifest_platforms(plugin):
    platforms = plugin["spec"]["platforms"]
    seen = set()
    for platform in platforms:
        labels = platform["selector"]["matchLabels"]
        assert set(labels) == {"os", "arch"} and "matchExpressions" not in platform["selector"]
        seen.add((labels["os"], labels["arch"]))
        assert platform["bin"] == NAME
        assert platform["uri"].endswith(f"/releases/download/v{__version__}/{ARCHIVE}")
        assert re.fullmatch(r"[a-f0-9]{64}", platform["sha256"])
        assert platform["files"] == [{"from": NAME, "to": "."}, {"from": "LICENSE", "to": "."}]
    assert seen == PLATFORMS and len(platforms) == len(PLATFORMS)
    assert len({(p["uri"], p["sha256"]) for p in platforms}) == 1, "one archive for every platform"


def without_digests(manifest):
    for platform in manifest["spec"]["platforms"]:
        platform.pop("sha256")
    return manifest


def test_index_copy_matches_plugin_yaml(plugin):
    copy = yaml.safe_load(load("krew-manifest/gpuisolate.yaml"))
    assert without_digests(copy) == without_digests(yaml.safe_load(load("plugin.yaml")))
    # The file name is the plugin name (krew-index's validate-krew-manifest checks).
    assert copy["metadata"]["name"] == "gpuisolate"


def test_release_bot_template_renders_to_plugin_yaml():
    template = load("krew-manifest/.krew.yaml")
    digest = "ab" * 32
    rendered = re.sub(r'\{\{\s*addURIAndSha "([^"]+)" \.TagName\s*\}\}',
                      lambda m: f'uri: {m.group(1)}\n    sha256: "{digest}"', template)
    rendered = rendered.replace("{{ .TagName }}", f"v{__version__}")
    assert "{{" not in rendered
    manifest = yaml.safe_load(rendered)
    assert {p["sha256"] for p in manifest["spec"]["platforms"]} == {digest}
    assert without_digests(manifest) == without_digests(yaml.safe_load(load("plugin.yaml")))


def test_kubernetes_is_pinned_below_36():
    requires = load("setup.cfg")
    assert re.search(r"kubernetes>=\d+,<36", requires)


def test_runtime_lock_matches_install_requires():
    build = runpy.run_path(os.path.join(REPO, "scripts", "build"), run_name="build_module")
    lock = load("scripts/lock/runtime.txt")
    assert f"install_requires digest: {build['requires_digest']()}" in lock, \
        "setup.cfg's install_requires changed: run scripts/build --lock"
    pins = dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+) \\$", lock))
    assert pins["kubernetes"].split(".")[0] == "35"
    assert all("--hash=sha256:" in block for block in lock.split("==")[1:])


# -- the zipapp's __main__ guard ---------------------------------------------------------------------
GUARD = os.path.join(REPO, "scripts", "zipapp_main.py")


def test_guard_parses_on_old_pythons():
    """Python 2.7-3.8 must reach the version check: no f-strings, no print(file=)."""
    source = load("scripts/zipapp_main.py")
    tree = ast.parse(source, feature_version=(3, 4))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)], "f-string"
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", "") == "print"], "print()"


def test_guard_answers_old_python_in_one_line(monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 8, 18, "final", 0))
    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit) as exc:
        runpy.run_path(GUARD, run_name="__main__")
    assert exc.value.code == 11
    assert err.getvalue() == "error: kubectl-gpuisolate needs Python >= 3.9, found 3.8\n"


def test_guard_exit_code_is_errors_exit_python():
    from kubectl_gpuisolate.exits import EXIT_PYTHON

    assert f"EXIT_PYTHON = {EXIT_PYTHON}" in load("scripts/zipapp_main.py")


def test_guard_hints_at_shiv_root_when_home_is_unwritable(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "file" / "home"))
    monkeypatch.delenv("SHIV_ROOT", raising=False)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / NAME)])
    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit) as exc:
        runpy.run_path(GUARD, run_name="__main__")
    assert exc.value.code == 11
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "cannot unpack into" in lines[0] \
        and "SHIV_ROOT" in lines[0]
