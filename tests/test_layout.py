"""The package's layout keeps its shape: no import circles (lazy imports included), a short matrix root.

The import graph is read from the source with :mod:`ast`, every ``import`` statement counted wherever it stands
(module level, inside functions, under ``TYPE_CHECKING``), so a circle hidden behind a lazy import is still one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hf_neuron"
#: At most this many modules (``__init__`` included) at the root of ``hf_neuron/matrix/``: the stages of a case
#: are subpackages.
MATRIX_ROOT_LIMIT = 12


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def _imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The modules of ``known`` that ``tree`` imports: ``import a.b`` names ``a.b``; ``from a import b`` names ``a.b``
    when that is a module, else ``a``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:
                    yield submodule
                elif base in known:
                    yield base


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (itself excluded)."""
    modules = _modules(root)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imported = set(_imported(tree, name, path.name == "__init__.py", known))
        graph[name] = imported - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_in_the_package() -> None:
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_lazy_circle(tmp_path: Path) -> None:
    package = tmp_path / "hf_neuron"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from hf_neuron.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("import hf_neuron.sub.a\n")
    graph = import_graph(package)
    assert graph["hf_neuron.c"] == {"hf_neuron.sub.a"}
    assert circles(graph) == [["hf_neuron.sub.a", "hf_neuron.sub.b"]]


def test_the_matrix_root_is_short_and_its_stages_are_subpackages() -> None:
    root = PACKAGE / "matrix"
    modules = sorted(path.name for path in root.glob("*.py"))
    assert len(modules) <= MATRIX_ROOT_LIMIT, modules
    stages = {path.name for path in root.iterdir() if (path / "__init__.py").is_file()}
    assert {"catalog", "scenarios", "case", "results"} <= stages


@pytest.mark.parametrize("reader", ["catalog.json", "ranking.csv", "known_failures.toml", "library_bugs.toml",
                                    "slices.toml", "tiny_overrides.toml", "tiny_diffusion.toml", "baselines",
                                    "upstream_not_applicable.toml", "checkpoints.toml"])
def test_only_the_compat_package_names_the_reviewed_data_files(reader: str) -> None:
    """One reader per data file: outside ``hf_neuron/compat/`` no module spells a file name of ``compat/``."""
    spelled = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "compat" not in path.relative_to(PACKAGE).parts[:1] and f'"{reader}"' in path.read_text(encoding="utf-8")
    ]
    assert spelled == []


#: Which top-level parts of the package a part may import. Dependencies point one way: vocabulary <- compat <- tiny <-
#: checkpoint <- matrix <- cli; report <- compat + vocabulary; the vocabulary imports nothing of hf-neuron but its one
#: error; the device and the patches know nothing of the matrix, and the device nothing of Hugging Face.
ALLOWED: dict[str, set[str]] = {
    "vocabulary": {"vocabulary", "errors"},
    "compat": {"compat", "errors", "vocabulary"},
    "tiny": {"tiny", "compat", "errors", "vocabulary"},
    # a checkpoint read, planned at full size and sliced through tiny's one shrinker
    "checkpoint": {"checkpoint", "tiny", "compat", "errors", "vocabulary"},
    "device": {"device", "settings", "errors", "import_hooks", "vocabulary"},
    "patches": {"patches", "backends", "settings", "errors", "import_hooks", "vocabulary"},
    # the upstream tests' records are read through their schema and their per-architecture summary
    "report": {"report", "compat", "errors", "vocabulary", "upstream.records", "upstream.summary"},
    "matrix": {"matrix", "checkpoint", "tiny", "compat", "device", "patches", "backends", "settings", "cpus", "errors",
               "_version", "import_hooks", "vocabulary"},
    # imported by the libraries' test utilities inside their test runs: the device module, a post-import hook, and
    # the patch records and registry (a test adaptation is a patch)
    "testing": {"testing", "backends", "errors", "import_hooks", "patches", "vocabulary"},
    # libraries' own test suites on neuron: the matrix's capture of failures, environment block and record writer,
    # the compat lists (tests not applicable, Hub stand-ins), the tiny builders of the stand-ins, the device plug-ins
    # it hands to the test runs, and the settings that say where each library's tests come from (--configured)
    "upstream": {"upstream", "matrix", "compat", "tiny", "testing", "settings", "cpus", "errors", "vocabulary"},
}
#: Modules the report may read although their part is not in its list (schemas and pure functions of records).
_READABLE = (["upstream", "records"], ["upstream", "summary"])


def _part(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[1:3]) if parts[1:3] in _READABLE else (parts[1] if len(parts) > 1 else "")


def wrong_way(graph: dict[str, set[str]], part: str) -> list[str]:
    """The imports of ``part``'s modules that :data:`ALLOWED` does not allow."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _part(module).split(".")[0] == part
        for target in targets
        if _part(target) not in ALLOWED[part] and _part(target).split(".")[0] not in ALLOWED[part]
    )


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_dependencies_point_one_way(part: str) -> None:
    assert wrong_way(import_graph(), part) == []


def test_an_import_against_the_flow_is_found() -> None:
    graph = {"hf_neuron.compat.catalog": {"hf_neuron.matrix.selection", "hf_neuron.errors"},
             "hf_neuron.report.tables": {"hf_neuron.vocabulary.records", "hf_neuron.matrix.results.store"}}
    assert wrong_way(graph, "compat") == ["hf_neuron.compat.catalog imports hf_neuron.matrix.selection"]
    assert wrong_way(graph, "report") == ["hf_neuron.report.tables imports hf_neuron.matrix.results.store"]


def test_every_test_of_the_suite_has_a_time_limit(request: pytest.FixtureRequest) -> None:
    from conftest import TEST_TIMEOUT_S

    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args == (TEST_TIMEOUT_S,), "a hang must fail one test, not the suite"
