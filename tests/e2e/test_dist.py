"""The distribution, end to end: scripts/build's artifacts, the zipapp on every
supported Python against the sandbox, the krew install of the built archive
with the real krew, krew's own manifest validation, completion through the real
kubectl with node names from the sandbox, and pip install of the checkout.

Needs the Python interpreters 3.8-3.13 (pyenv's, or pythonX.Y on PATH, or
PYTHON3_9=/path/... overrides) and krew, which tests/sandbox/build builds with
the sandbox binaries.  A missing prerequisite fails with what to install."""

import glob
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandbox_helpers import GPU_A, GPU_B, KUBECTL, REPO  # noqa: E402

NAME = "kubectl-gpuisolate"
SUPPORTED = ["3.9", "3.10", "3.11", "3.12", "3.13"]
EXIT_PYTHON = 11


def version():
    text = (REPO / "kubectl_gpuisolate" / "__init__.py").read_text()
    return re.search(r'__version__ = "([^"]+)"', text).group(1)


VERSION = version()
ARCHIVE = f"{NAME}-v{VERSION}.tar.gz"


def find_python(minor):
    """An interpreter for Python ``minor`` (e.g. "3.9"), or a failure that says what to install."""
    override = os.environ.get("PYTHON" + minor.replace(".", "_"))
    candidates = [override] if override else []
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{minor}.*/bin/python{minor}")))
    candidates += [shutil.which(f"python{minor}")]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == minor:
            return candidate
    pytest.fail(f"Python {minor} is needed for the zipapp matrix and was not found: install it "
                f"(pyenv install {minor}) or set PYTHON{minor.replace('.', '_')}=/path/to/python{minor}")


def python_on_path(tmp_path, minor):
    """A PATH whose python3 is Python ``minor``, so the zipapp's shebang picks it."""
    directory = tmp_path / f"py{minor}"
    directory.mkdir()
    (directory / "python3").symlink_to(find_python(minor))
    return f"{directory}{os.pathsep}{os.environ['PATH']}"


def run(cmd, *, env=None, timeout=300, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env or dict(os.environ), **kwargs)


def SOURCE_IGNORE(directory, names):  # noqa: N802 (a copytree ignore function)
    """The checkout as a fresh clone would have it: no caches, builds or sandbox state."""
    skip = {".git", ".cache", ".sandbox", "__pycache__", ".pytest_cache"}
    if os.path.samefile(directory, REPO):
        skip |= {"dist", "build"}
    return [n for n in names if n in skip or n.endswith(".egg-info")]


def build(out, source=REPO):
    result = run([sys.executable, str(source / "scripts" / "build"), "--out", str(out),
                  "--cache", str(REPO / ".cache" / "build")], timeout=1200)
    assert result.returncode == 0, f"scripts/build failed:\n{result.stderr[-3000:]}"
    return out


@pytest.fixture(scope="session")
def dist():
    """scripts/build's dist/, built once per session."""
    return build(REPO / "dist")


@pytest.fixture(scope="session")
def sandbox_bin():
    """The versioned cache of the sandbox binaries (with krew), as tests/sandbox/build prints it."""
    result = run([str(REPO / "tests" / "sandbox" / "build")], timeout=3600)
    assert result.returncode == 0, f"tests/sandbox/build failed:\n{result.stderr[-3000:]}"
    directory = result.stdout.strip().splitlines()[-1]
    for tool in ("krew", "validate-krew-manifest"):
        assert os.access(os.path.join(directory, tool), os.X_OK), f"{tool} missing in {directory}"
    return directory


def zipapp_env(tmp_path, **extra):
    env = dict(os.environ, SHIV_ROOT=str(tmp_path / "shiv"))
    env.update(extra)
    return env


# -- artifacts ----------------------------------------------------------------------------------------
def test_archive_holds_regular_files_only_deterministically(dist):
    path = dist / ARCHIVE
    with open(path, "rb") as handle:
        header = handle.read(10)
    assert header[:3] == b"\x1f\x8b\x08" and header[3] == 0, "gzip header carries a name or flags"
    assert header[4:8] == b"\0\0\0\0", "gzip header carries a timestamp"
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["LICENSE", "README.md", NAME]
    for member in members:
        assert member.isreg(), member.name
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
        assert member.mtime == members[0].mtime
    modes = {m.name: m.mode for m in members}
    assert modes == {"LICENSE": 0o644, "README.md": 0o644, NAME: 0o755}
    assert path.stat().st_size <= 5_000_000
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (dist / f"{ARCHIVE}.sha256").read_text() == f"{digest}  {ARCHIVE}\n"


def test_rendered_manifest_has_the_archive_and_its_sha256(dist):
    import yaml

    manifest = yaml.safe_load((dist / "plugin.yaml").read_text())
    digest = hashlib.sha256((dist / ARCHIVE).read_bytes()).hexdigest()
    assert manifest["spec"]["version"] == f"v{VERSION}"
    for platform in manifest["spec"]["platforms"]:
        assert platform["sha256"] == digest
        assert platform["uri"].endswith(f"/releases/download/v{VERSION}/{ARCHIVE}")


def test_zipapp_needs_no_compiled_extension(dist):
    with zipfile.ZipFile(dist / NAME) as archive:
        names = archive.namelist()
        environment = json.loads(archive.read("environment.json"))
        main = archive.read("__main__.py").decode()
    assert not [n for n in names if re.search(r"\.(so|pyd|dylib)(\.[0-9.]+)?$", n)]
    assert environment["entry_point"] == "kubectl_gpuisolate.cli:entry_point"
    assert f'BUILD_ID = "{environment["build_id"]}"' in main
    assert names == sorted(names)
    assert (dist / NAME).read_bytes().startswith(b"#!/usr/bin/env python3\n")


def test_build_is_reproducible(dist, tmp_path):
    """Another checkout path and output directory, the same bytes."""
    source = tmp_path / "elsewhere"
    shutil.copytree(REPO, source, ignore=SOURCE_IGNORE)
    again = build(tmp_path / "again", source=source)
    for name in (NAME, ARCHIVE, f"{ARCHIVE}.sha256", "plugin.yaml"):
        assert (again / name).read_bytes() == (dist / name).read_bytes(), f"{name} differs"


# -- the Python matrix --------------------------------------------------------------------------------
@pytest.mark.parametrize("minor", SUPPORTED)
def test_zipapp_runs_status_on_each_python(minor, dist, sandbox, tmp_path):
    env = zipapp_env(tmp_path, PATH=python_on_path(tmp_path, minor), KUBECONFIG=str(sandbox.kubeconfig))
    result = run([str(dist / NAME), "status"], env=env)
    assert result.returncode == 0, result.stderr
    assert GPU_A in result.stdout and GPU_B in result.stdout
    assert "Traceback" not in result.stderr
    unpacked = os.listdir(tmp_path / "shiv")
    assert len([d for d in unpacked if d.startswith(f"{NAME}_")]) == 1, unpacked
    # The warm start (no shiv bootstrap) gives the same answer.
    again = run([str(dist / NAME), "status"], env=env)
    assert again.returncode == 0 and again.stdout == result.stdout


def test_python_38_gets_one_line_and_exit_11(dist, tmp_path):
    env = zipapp_env(tmp_path, PATH=python_on_path(tmp_path, "3.8"))
    result = run([str(dist / NAME), "status"], env=env)
    assert result.returncode == EXIT_PYTHON
    assert result.stderr == f"error: {NAME} needs Python >= 3.9, found 3.8\n"
    assert result.stdout == ""
    assert not (tmp_path / "shiv").exists(), "nothing may be unpacked for an unsupported Python"


def test_parallel_first_runs_do_not_collide(dist, tmp_path):
    env = zipapp_env(tmp_path)

    def once(_):
        return run([str(dist / NAME), "version"], env=env)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(once, range(6)))
    for result in results:
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"{NAME} {VERSION}\n"
    entries = sorted(os.listdir(tmp_path / "shiv"))
    unpacked = [e for e in entries if not e.startswith(".")]
    assert len(unpacked) == 1 and unpacked[0].startswith(f"{NAME}_"), entries
    assert not [e for e in entries if e.endswith(".tmp")]


def test_shiv_variables_hand_over_to_shivs_bootstrap(dist, tmp_path):
    env = zipapp_env(tmp_path)
    assert run([str(dist / NAME), "version"], env=env).returncode == 0
    forced = run([str(dist / NAME), "version"], env=dict(env, SHIV_FORCE_EXTRACT="1"))
    assert forced.returncode == 0 and forced.stdout == f"{NAME} {VERSION}\n", forced.stderr


@pytest.mark.parametrize("home", ["under-a-file", "/proc"])
def test_unwritable_home_gives_a_one_line_hint(home, dist, tmp_path):
    if home == "under-a-file":
        (tmp_path / "file").write_text("")
        home = str(tmp_path / "file" / "home")
    env = {k: v for k, v in os.environ.items() if k != "SHIV_ROOT"}
    env["HOME"] = home
    result = run([str(dist / NAME), "version"], env=env)
    assert result.returncode == EXIT_PYTHON
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "cannot unpack into" in lines[0] \
        and "SHIV_ROOT" in lines[0], lines
    # The hint works.
    fixed = run([str(dist / NAME), "version"], env=dict(env, SHIV_ROOT=str(tmp_path / "shiv")))
    assert fixed.returncode == 0 and fixed.stdout == f"{NAME} {VERSION}\n"


# -- krew ---------------------------------------------------------------------------------------------
@pytest.fixture
def krew_env(sandbox_bin, tmp_path, sandbox):
    """PATH with kubectl-krew and $KREW_ROOT/bin, KREW_ROOT in a temporary directory."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "kubectl-krew").symlink_to(os.path.join(sandbox_bin, "krew"))
    root = tmp_path / "krew"
    # Drop other copies of the plugin (e.g. the dev venv's console script) so that
    # only krew's link can answer, and its removal is visible.
    rest = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, NAME))]
    return dict(os.environ, KREW_ROOT=str(root), SHIV_ROOT=str(tmp_path / "shiv"),
                PATH=os.pathsep.join([str(root / "bin"), str(tools), *rest]),
                KUBECONFIG=str(sandbox.kubeconfig))


def test_krew_installs_runs_completes_and_uninstalls(dist, krew_env):
    root = krew_env["KREW_ROOT"]
    installed = run([KUBECTL, "krew", "install", f"--manifest={dist / 'plugin.yaml'}",
                     f"--archive={dist / ARCHIVE}"], env=krew_env, stdin=subprocess.DEVNULL)
    assert installed.returncode == 0, installed.stderr
    link = os.path.join(root, "bin", NAME)
    assert os.path.islink(link)
    assert os.path.realpath(link) == os.path.join(root, "store", "gpuisolate", f"v{VERSION}", NAME)

    status = run([KUBECTL, "gpuisolate", "status"], env=krew_env)
    assert status.returncode == 0, status.stderr
    assert GPU_A in status.stdout and GPU_B in status.stdout
    listed = run([KUBECTL, "plugin", "list", "--name-only"], env=krew_env)
    assert NAME in listed.stdout.split()

    # The caveat's completion link, then kubectl's completion with node names from the sandbox.
    os.symlink(NAME, os.path.join(root, "bin", "kubectl_complete-gpuisolate"))
    completed = run([KUBECTL, "__complete", "gpuisolate", "taint", GPU_A, ""], env=krew_env)
    assert completed.returncode == 0, completed.stderr
    assert [line.split("\t")[0] for line in completed.stdout.splitlines()] == [GPU_B, ":4"]

    # krew refuses to uninstall without an index; an empty one stands in (no network here).
    index = os.path.join(root, "index", "default")
    os.makedirs(index)
    assert run(["git", "init", "-q", index]).returncode == 0
    removed = run([KUBECTL, "krew", "uninstall", "gpuisolate"], env=krew_env)
    assert removed.returncode == 0, removed.stderr
    assert not os.path.lexists(link)
    assert not os.path.exists(os.path.join(root, "store", "gpuisolate"))
    gone = run([KUBECTL, "gpuisolate", "status"], env=krew_env)
    assert gone.returncode != 0


def test_krew_index_copy_passes_krews_validation(sandbox_bin):
    validator = os.path.join(sandbox_bin, "validate-krew-manifest")
    result = run([validator, "-manifest", str(REPO / "krew-manifest" / "gpuisolate.yaml"), "-skip-install"])
    assert result.returncode == 0, result.stderr
    assert "structural validation OK" in result.stderr


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_krew_validation_installs_every_platform(dist, sandbox_bin, tmp_path):
    """validate-krew-manifest as krew-index CI runs it (no -skip-install): it
    downloads the uri, checks the sha256, installs for linux/darwin x amd64/arm64
    and looks for the license.  The uri points at a server on 127.0.0.1."""
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(dist / ARCHIVE, served / ARCHIVE)
    handler = lambda *a, **k: _Quiet(*a, directory=str(served), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        manifest = tmp_path / "plugins" / "gpuisolate.yaml"  # the validator wants this file name
        manifest.parent.mkdir()
        text = (dist / "plugin.yaml").read_text()
        manifest.write_text(re.sub(r"(?m)^(\s+uri:).*$",
                                   rf"\1 http://127.0.0.1:{server.server_port}/{ARCHIVE}", text))
        tools = tmp_path / "tools"
        tools.mkdir()
        (tools / "kubectl-krew").symlink_to(os.path.join(sandbox_bin, "krew"))
        env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}",
                   NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
        result = run([os.path.join(sandbox_bin, "validate-krew-manifest"), "-manifest", str(manifest)],
                     env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "all 4 spec.platforms installed fine" in result.stderr


# -- completion through kubectl, from the zipapp ---------------------------------------------------------
@pytest.fixture
def zipapp_path(dist, tmp_path):
    """A PATH holding the built zipapp and its kubectl_complete-gpuisolate link."""
    directory = tmp_path / "bin"
    directory.mkdir()
    shutil.copy2(dist / NAME, directory / NAME)
    (directory / "kubectl_complete-gpuisolate").symlink_to(NAME)
    return f"{directory}{os.pathsep}{os.environ['PATH']}"


def kubectl_complete(env, *args):
    result = run([KUBECTL, "__complete", "gpuisolate", *args], env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return [line.split("\t")[0] for line in lines[:-1]], lines[-1]


def test_kubectl_completes_gpu_nodes_from_the_sandbox(zipapp_path, sandbox, tmp_path):
    env = zipapp_env(tmp_path, PATH=zipapp_path, KUBECONFIG=str(sandbox.kubeconfig))
    assert kubectl_complete(env, "status", "") == (sorted([GPU_A, GPU_B]), ":4")
    assert kubectl_complete(env, "untaint", GPU_A[:-3]) == ([GPU_A], ":4")
    assert kubectl_complete(env, "taint", GPU_B, "") == ([GPU_A], ":4")
    # The subcommands and flags from the same helper.
    assert kubectl_complete(env, "st") == (["status"], ":4")
    assert kubectl_complete(env, "status", "--exit") == (["--exit-code"], ":4")


def test_bash_completes_the_zipapp_directly(zipapp_path, sandbox, tmp_path):
    env = zipapp_env(tmp_path, PATH=zipapp_path, KUBECONFIG=str(sandbox.kubeconfig))
    driver = r"""
source <(kubectl-gpuisolate completion bash)
fn=$(complete -p kubectl-gpuisolate | sed -E 's/.* -F ([^ ]+) .*/\1/')
COMP_LINE="kubectl-gpuisolate taint "; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
COMP_WORDS=(kubectl-gpuisolate taint ""); COMP_CWORD=2
"$fn" kubectl-gpuisolate "" taint
printf '%s\n' "${COMPREPLY[@]}"
"""
    result = run(["bash", "-c", driver], env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted([GPU_A, GPU_B])


# -- pip ------------------------------------------------------------------------------------------------
def test_pip_install_of_the_checkout(tmp_path):
    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    source = tmp_path / "src"  # a copy, so the build leaves no files in the checkout
    shutil.copytree(REPO, source, ignore=SOURCE_IGNORE)
    installed = run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                     str(source)], timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    result = run([str(venv / "bin" / NAME), "--version"], env=dict(os.environ, HOME=str(tmp_path)))
    assert result.returncode == 0 and result.stdout == f"{NAME} {VERSION}\n"
    helper = venv / "bin" / "kubectl_complete-gpuisolate"
    helper.symlink_to(NAME)
    completed = run([str(helper), "ver"])
    assert completed.stdout == "version\tprint the plugin's version\n:4\n"
