"""The grader's modules import one another without circles, read from their source (every import,
at the top of a module or inside a function: a lazy import is a circle that only waits to be run).

Files once tied in circles are held to none; the circles left elsewhere are listed below as they
are, so that a new circle, or one that grows, fails here. A circle that is broken may leave the
list; shrinking it never fails.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "grader"

# Files that were tied in circles and must stay out of any: a piece both sides need lives below them.
UNTIED = (
    # the batch and its Ray executor: both executors stand on grader.staff.batch.executor and .record
    "grader.staff.batch", "grader.staff.batch.run", "grader.staff.batch.ray", "grader.staff.batch.local",
    "grader.staff.batch.record", "grader.staff.batch.executor", "grader.staff.batch.intake", "grader.staff.batch.plan",
    # the sandbox, the fork server and the reaper: tags and rlimits are below all three
    "grader.run.parent.sandbox", "grader.run.parent.fork_server", "grader.run.parent.reaper",
    "grader.run.parent.tags", "grader.run.parent.rlimits",
    # the two student bundles: the TOML writer is below both
    "grader.staff.student_bundle", "grader.pyexercise.student_bundle",
    # the correctness check and its evidence: the early-output-read messages live with the evidence
    "grader.checks.correctness", "grader.checks.evidence",
    # validate and the conventions: the wrong file's header is read by grader.staff.expectation
    "grader.staff.validate", "grader.staff.conventions", "grader.staff.expectation",
    # the supervisor and the GPU worker: both hand files over through grader.run.parent.file_handoff
    "grader.run.parent.supervisor", "grader.run.parent.gpu_worker", "grader.run.parent.file_handoff",
    # the coverage census stands on the emulator; the refusal table it shares is below both
    "grader.emu.coverage", "grader.emu.refusals",
    # the API and the pipelines: each kind is handed its exercise by grader.api and imports nothing of it;
    # what the kinds share is in grader.grading, and `grade profile` compiles through grader.kinds.cuda_compile
    "grader.api", "grader.kinds.registry", "grader.kinds.cuda", "grader.kinds.python", "grader.kinds.cuda_compile",
    "grader.pyexercise.grade", "grader.grading.seed", "grader.grading.output", "grader.grading.submitted",
    # the counter checks read the shipped counters from grader.checks.shipped; grader.shipped_counters measures
    "grader.checks", "grader.checks.counters", "grader.checks.shipped", "grader.shipped_counters", "grader.profile",
)

# The circles still in the grader (issue 32 names them; each is being broken on its own branch).
EXPECTED = (
    # The emulator's machine and its op tables (one unit, split for size; issue 32 lets the machine and
    # its op tables stay one, said at the top of the package).
    frozenset({"grader.emu.machine", "grader.emu.ops_async", "grader.emu.ops_control", "grader.emu.ops_warp"}),
    # The jail's launcher and its layers.
    frozenset({"grader.run.jail.launch", "grader.run.jail.layers"}),
)


def module_name(path: Path) -> str:
    """The dotted name of a file under grader/ (a package's __init__ is the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, wherever it is, but those under `if TYPE_CHECKING:` (never run)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for field, value in ast.iter_fields(node):
            if isinstance(node, ast.If) and field == "body" and _is_type_checking(node.test):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the grader modules it imports. `from X import y` imports X.y where that is a module,
    else X itself (y is a name defined in X)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:  # `import grader.x.y` where y is not a file: grader.x
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_graph_reads_lazy_relative_and_absolute_imports():
    graph = import_graph()
    assert "grader.run.parent.tags" in graph["grader.run.parent.reaper"]           # from .tags import ...
    assert "grader.run.parent.fork_server" in graph["grader.run.parent.sandbox"]   # from . import fork_server
    assert "grader.staff.batch.ray" in graph["grader.staff.batch.run"]             # lazy, inside a function
    assert "grader.api" in graph["grader.cli.commands"]


def test_imports_under_type_checking_are_left_out_and_the_rest_are_read():
    source = ("import a\nfrom b import c\nif TYPE_CHECKING:\n    import never_run\nelse:\n    import d\n"
              "def f():\n    from . import e\n")
    read = [alias.name for node in _imports(ast.parse(source)) for alias in node.names]
    assert read == ["a", "c", "d", "e"]


def test_the_circle_finder_finds_a_ring_and_ignores_a_chain():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_files_once_in_circles_are_in_none():
    graph = import_graph()
    missing = [m for m in UNTIED if m not in graph]
    assert not missing, f"modules named here no longer exist (update UNTIED): {missing}"
    tied = {m: sorted(group) for group in circles(graph) for m in UNTIED if m in group}
    assert not tied, "a circle of imports came back: " + "; ".join(f"{m} in {g}" for m, g in tied.items())


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_kind_and_nothing_the_kinds_share_reaches_the_api():
    graph = import_graph()
    below = [m for m in graph if m.startswith(("grader.kinds", "grader.grading", "grader.pyexercise"))]
    assert "grader.kinds.cuda" in below and "grader.grading.seed" in below
    reaching = sorted(m for m in below if "grader.api" in reachable(graph, m))
    assert not reaching, f"these import grader.api, directly or not (move what they need into grader.grading): {reaching}"


def test_no_circle_but_the_known_ones():
    new = [sorted(group) for group in circles(import_graph()) if not any(group <= known for known in EXPECTED)]
    assert not new, ("new circles of imports among the grader's modules (move the piece both sides need into a "
                     f"module of its own, below them): {new}")
