"""The layering rules of docs/design.md, checked on every import statement of the package."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kubectl_gpuisolate"
CORE = ("taints", "selectors", "gpu", "planner", "eviction_policy", "kubeconfig")
KUBE_LAYERS = ("credentials", "transport", "api")      # each may use only the ones before it


def imports(path):
    """Absolute module names imported anywhere in the file (also inside functions)."""
    names = set()
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_the_package_has_the_expected_modules():
    names = {p.relative_to(PACKAGE).as_posix() for p in modules()}
    assert {"kube/__init__.py", "kube/api.py", "kube/transport.py", "kube/credentials.py",
            "cli.py", "output.py"} <= names
    assert "kube.py" not in names


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_only_the_kube_package_imports_the_http_and_kubernetes_clients(path):
    if path.parent.name == "kube":
        return
    bad = {n for n in imports(path) if n.split(".")[0] in ("urllib3", "kubernetes")}
    assert not bad, f"{path.name} imports {sorted(bad)}: API access belongs to kubectl_gpuisolate/kube/"


@pytest.mark.parametrize("name", CORE)
def test_the_pure_core_does_no_io_and_knows_no_command(name):
    found = imports(PACKAGE / f"{name}.py")
    bad = {n for n in found if n.split(".")[0] in ("urllib3", "kubernetes", "socket", "http")
           or n.startswith(("kubectl_gpuisolate.kube", "kubectl_gpuisolate.commands",
                            "kubectl_gpuisolate.cli", "kubectl_gpuisolate.output"))}
    assert not bad, f"{name}.py imports {sorted(bad)}"


@pytest.mark.parametrize("index,layer", list(enumerate(KUBE_LAYERS)))
def test_kube_layers_use_only_the_layers_below(index, layer):
    found = imports(PACKAGE / "kube" / f"{layer}.py")
    above = {f"kubectl_gpuisolate.kube.{name}" for name in KUBE_LAYERS[index + 1:]}
    assert not {n for n in found if any(n == a or n.startswith(a + ".") for a in above)}
