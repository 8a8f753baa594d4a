"""The layering rules of docs/design.md as folder rules, checked on every import statement of
the package (also imports inside functions)."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kubectl_gpuisolate"
ROOT = "kubectl_gpuisolate"
FOLDERS = ("core", "kube", "evacuation", "output", "completion", "commands")
TOP_MODULES = ("__init__.py", "__main__.py", "cli.py", "interrupts.py", "errors.py", "exits.py",
               "flags.py")
# kube/ from the bottom up: each module may use only the ones before it.
KUBE_LAYERS = ("yamlite", "config", "rules", "x509", "exec_plugin", "auth", "proxy", "retry", "trace",
               "transport", "essentials", "policies", "api", "nodes", "gather")
# The standard library the pure core may use: no files, clock, threads, processes or sockets.
CORE_STDLIB = {"re", "typing", "dataclasses", "enum", "collections", "functools", "itertools",
               "math", "fractions", "decimal"}


def imports(path, *, top_level_only=False):
    """Absolute module names imported in the file (with ``top_level_only``, only at module level)."""
    names = set()
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def modules(folder=None):
    root = PACKAGE / folder if folder else PACKAGE
    return sorted(root.rglob("*.py"))


def ours(names, *prefixes):
    """The names that are (or are inside) one of our modules ``ROOT.<prefix>``."""
    wanted = tuple(f"{ROOT}.{p}" for p in prefixes)
    return {n for n in names if any(n == w or n.startswith(w + ".") for w in wanted)}


def label(path):
    return path.relative_to(PACKAGE).as_posix()


def test_the_package_is_the_folders_of_the_layers_and_the_entry_modules():
    top = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    assert top == set(FOLDERS) | set(TOP_MODULES)
    for folder in FOLDERS:
        assert (PACKAGE / folder / "__init__.py").is_file(), folder
        assert not [p for p in (PACKAGE / folder).iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert {p.stem for p in (PACKAGE / "kube").glob("*.py")} == set(KUBE_LAYERS) | {"__init__"}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """{module: the modules of ours it makes Python load}: every import statement (also inside
    functions), a name imported from a module counted as that module, and a module's packages
    too (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first)."""
    known = {module_name(path): path for path in modules()}
    graph = {}
    for name, path in known.items():
        edges = set()
        for imported in {n for n in imports(path) if n.startswith(ROOT + ".")}:
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            parts = imported.split(".")
            edges.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        graph[name] = {e for e in edges if e in known and e != name and not name.startswith(e + ".")}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle():
    """No module reaches itself through the modules it loads (docs/design.md: each layer
    imports only those below it), counting imports inside functions."""
    assert cycles(import_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", modules(), ids=label)
def test_only_the_kube_folder_imports_the_http_and_kubernetes_clients(path):
    if path.parent.name == "kube":
        return
    bad = {n for n in imports(path) if n.split(".")[0] in ("urllib3", "kubernetes")}
    assert not bad, f"{label(path)} imports {sorted(bad)}: API access belongs to kubectl_gpuisolate/kube/"


@pytest.mark.parametrize("path", modules("core"), ids=label)
def test_the_core_is_pure_stdlib_errors_and_itself(path):
    found = imports(path)
    outside = {n for n in found if not n.startswith(ROOT) and n.split(".")[0] not in CORE_STDLIB}
    assert not outside, f"{label(path)} imports {sorted(outside)}: the core does no I/O"
    allowed = ours(found, "core", "errors")
    assert not {n for n in found if n.startswith(ROOT)} - allowed - {ROOT}, label(path)


@pytest.mark.parametrize("path", modules("kube"), ids=label)
def test_kube_knows_no_engine_output_command_or_cli(path):
    found = imports(path)
    assert not ours(found, "evacuation", "output", "completion", "commands", "cli", "interrupts")


@pytest.mark.parametrize("index,layer", list(enumerate(KUBE_LAYERS)))
def test_kube_layers_use_only_the_layers_below(index, layer):
    found = imports(PACKAGE / "kube" / f"{layer}.py")
    above = ours(found, *(f"kube.{name}" for name in KUBE_LAYERS[index + 1:]))
    assert not above, f"kube/{layer}.py imports {sorted(above)}"


@pytest.mark.parametrize("layer", ("nodes", "gather"))
def test_the_kube_helpers_use_only_the_api_calls(layer):
    """nodes and gather are written against the Kube calls, never the wire below them."""
    found = imports(PACKAGE / "kube" / f"{layer}.py")
    assert not ours(found, "kube.config", "kube.x509", "kube.auth", "kube.transport")


@pytest.mark.parametrize("path", modules("evacuation"), ids=label)
def test_the_engine_knows_no_command_cli_or_completion_and_no_wire(path):
    found = imports(path)
    assert not ours(found, "commands", "cli", "completion",
                    "kube.config", "kube.x509", "kube.auth", "kube.transport", "kube.api")


@pytest.mark.parametrize("path", modules("output"), ids=label)
def test_output_talks_to_no_cluster_and_knows_no_command(path):
    found = imports(path)
    assert not ours(found, "kube", "commands", "cli", "completion", "interrupts")


@pytest.mark.parametrize("path", modules("commands") + modules("completion"), ids=label)
def test_commands_and_completion_import_the_api_client_only_when_they_run(path):
    """--help and completion must not pay for the kube package (ssl, subprocess, ...)."""
    assert not ours(imports(path, top_level_only=True), "kube")


@pytest.mark.parametrize("path", modules(), ids=label)
def test_only_the_entry_points_exit_the_process(path):
    if label(path) in ("cli.py", "__main__.py", "interrupts.py"):
        return
    calls = {f"{n.func.value.id}.{n.func.attr}" for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name)}
    assert not calls & {"sys.exit", "os._exit"}, f"{label(path)} ends the process: raise an error instead"


MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 50


@pytest.mark.parametrize("path", modules(), ids=label)
def test_no_product_file_is_over_400_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FILE_LINES, f"{label(path)} has {lines} lines: split it along its jobs"


@pytest.mark.parametrize("path", modules(), ids=label)
def test_no_function_is_over_50_lines(path):
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{label(path)}: {', '.join(long)}"


def test_every_test_path_a_module_names_exists():
    """Docstrings and comments that point to a test file point to one that is there."""
    import re
    named = {(label(path), ref) for path in modules()
             for ref in re.findall(r"\btests/[\w./-]*\w", path.read_text(encoding="utf-8"))}
    assert named, "no module names a test path: the pattern is wrong"
    assert [(where, ref) for where, ref in sorted(named) if not (PACKAGE.parent / ref).exists()] == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_package_says_what_it_may_import_and_imports_no_more(folder):
    """Each package's docstring has a line "May import: a, b." naming our packages and modules it
    may use; an import of any other of ours fails here (and the line must be kept true)."""
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text(encoding="utf-8")))
    said = [line for line in doc.splitlines() if line.startswith("May import:")]
    assert len(said) == 1, f"{folder}/__init__.py: no 'May import:' line"
    allowed = {word.strip(" .,") for word in said[0][len("May import:"):].split("(")[0].split(",")}
    allowed.discard("")
    top = {p.stem for p in PACKAGE.iterdir() if p.name != "__pycache__"} - {"__init__", "__main__"}
    assert allowed <= top, allowed - top
    used = {n.split(".")[1] for path in modules(folder) for n in ours(imports(path), *top)}
    assert used - {folder} <= allowed, f"{folder} imports {sorted(used - {folder} - allowed)}"
