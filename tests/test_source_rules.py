"""Rules the source of ``rte/`` keeps: one definition per public name, modules of one screenful,
citations a reader of this repository can follow, and no import circle.

All read the source text; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rte"
MAX_MODULE_LINES = 450

ALLOWED_TWICE: dict[str, str] = {}
"""Names allowed in two modules, with the modules. An entry that no longer applies fails too."""


def _modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_pb2" not in path.name:  # generated gRPC stubs
            yield path


def _product_modules() -> Iterator[Path]:
    """The modules of rte itself. The test doubles (rte/testing) are left out on purpose: a
    double keeps its own names (its merge patch, its object type) so that it never shares code
    with what it checks."""
    testing = PACKAGE / "testing"
    return (p for p in _modules() if testing not in p.parents)


def _is_type_variable(value: ast.expr | None) -> bool:
    # TypeVar("T") is notation local to its module, like a parameter name.
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("TypeVar", "ParamSpec")
    )


def _public_names(tree: ast.Module) -> Iterator[str]:
    """Top-level functions, classes, constants and type aliases (not variables like ``log``)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign) and not _is_type_variable(node.value):
            names = [t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.islower()]
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and not node.target.id.islower()
            and not _is_type_variable(node.value)
        ):
            names = [node.target.id]
        else:
            continue
        yield from (n for n in names if not n.startswith("_"))


def test_no_public_name_is_defined_in_two_modules() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in _product_modules():
        for name in _public_names(ast.parse(path.read_text(encoding="utf-8"))):
            where[name].append(path.relative_to(ROOT).as_posix())
    twice = {name: " ".join(paths) for name, paths in where.items() if len(paths) > 1}
    assert {n: p for n, p in twice.items() if n not in ALLOWED_TWICE} == {}
    stale = {n: p for n, p in ALLOWED_TWICE.items() if twice.get(n) != p}
    assert stale == {}, "remove allow-list entries that no longer apply"


def test_the_rule_sees_functions_classes_constants_and_aliases_but_not_variables() -> None:
    tree = ast.parse(
        "import x\n"
        "T = TypeVar('T')\n"
        "log = logging.getLogger(__name__)\n"
        "LIMIT = 3\n"
        "GiB: int = 1024**3\n"
        "PodKey = tuple[str, str]\n"
        "_PRIVATE = 1\n"
        "def f(): pass\n"
        "class C: pass\n"
    )
    assert list(_public_names(tree)) == ["LIMIT", "GiB", "PodKey", "f", "C"]


def test_no_module_is_longer_than_a_screenful_or_two() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): n
        for path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


# A section sign must follow a document of this repository ("docs/x.md §2"); documents kept
# elsewhere (design seeds, specs beside the repository) are cited by their upstream source instead.
_SECTION = re.compile(r"(\S*)\s*§")
_SEED = re.compile(r"\bseed\s+\d{3}\b", re.IGNORECASE)
_MARKDOWN = re.compile(r"(\S+\s+)?([\w./-]+\.md)\b")
_UPSTREAM = re.compile(r"^[\w.-]+/[\w.-]+$")  # "owner/repo" before an upstream path


def _in_repository(cited: str) -> bool:
    return (ROOT / cited).is_file() or (ROOT / "docs" / cited).is_file()


def _bad_citations(text: str) -> list[str]:
    """Citations in ``text`` a reader of this repository cannot follow."""
    plain = re.sub(r"[`()\[\],;:\"']", " ", text)
    bad = [m.group(0) for m in _SEED.finditer(plain)]
    for m in _SECTION.finditer(plain):
        if not (m.group(1).endswith(".md") and _in_repository(m.group(1))):
            bad.append(m.group(0).strip())
    for m in _MARKDOWN.finditer(plain):
        before, cited = (m.group(1) or "").strip(), m.group(2)
        if _UPSTREAM.match(before) or ("/" in cited and not cited.startswith("docs/")):
            continue  # an upstream path, cited by repository
        if not _in_repository(cited):
            bad.append(cited)
    return bad


def test_citations_in_rte_name_upstream_sources_or_documents_of_this_repository() -> None:
    bad = {
        path.relative_to(ROOT).as_posix(): found
        for path in _modules()
        if (found := _bad_citations(path.read_text(encoding="utf-8")))
    }
    assert bad == {}


def test_the_citation_rule_tells_followable_citations_from_the_others() -> None:
    assert _bad_citations("see docs/fingerprint-agreement.md, and README.md") == []
    assert _bad_citations("kubernetes-sigs/scheduler-plugins ``pkg/x/cache/docs/design.md``") == []
    assert _bad_citations("koordinator-sh/koordinator docs/proposals/load-aware.md") == []
    assert _bad_citations("(reference §5.3)") == ["reference §"]
    assert _bad_citations("fingerprint.md §7.4") == ["fingerprint.md §", "fingerprint.md"]
    assert _bad_citations("seed 003's idea") == ["seed 003"]
    assert _bad_citations("see docs/missing.md") == ["docs/missing.md"]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(name: str, is_package: bool, tree: ast.Module, known: set[str]) -> set[str]:
    """The rte modules ``tree`` (module ``name``) imports, anywhere in it: at the top, in a
    function, under ``TYPE_CHECKING`` (a circle through annotations is still one to a reader)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known}


def _import_graph() -> dict[str, set[str]]:
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _modules()}
    known = {_module_name(path) for path in trees}
    return {
        _module_name(path): _imported(_module_name(path), path.name == "__init__.py", tree, known)
        for path, tree in trees.items()
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """For every package, the circles among its direct children (modules and subpackages, a
    child standing for everything inside it): one per strongly connected group. A circle of
    modules always shows as one of these, at the package holding all of them."""
    packages = {".".join(m.split(".")[:n]) for m in graph for n in range(1, m.count(".") + 1)}
    circles: list[list[str]] = []
    for package in sorted(packages):
        prefix = package + "."

        def child(module: str, prefix: str = prefix) -> str | None:
            return prefix + module[len(prefix) :].split(".")[0] if module.startswith(prefix) else None

        edges: dict[str, set[str]] = defaultdict(set)
        for source, targets in graph.items():
            if (a := child(source)) is not None:
                edges[a].update(b for t in targets if (b := child(t)) is not None and b != a)
        reach: dict[str, set[str]] = {}
        for start in list(edges):
            seen, todo = set(), [start]
            while todo:
                for nxt in edges.get(todo.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            reach[start] = seen
        done: set[str] = set()
        for a in sorted(reach):
            group = sorted(b for b in reach if a in reach[b] and b in reach[a])
            if group and a not in done:
                done.update(group)
                circles.append(group)
    return circles


def test_no_import_circle_anywhere_in_rte() -> None:
    """Each package's children import one another in one direction only, so a walk through the
    code goes down and never comes back to a room it left (docs/architecture.md)."""
    assert _circles(_import_graph()) == []


def test_the_circle_rule_sees_circles_between_modules_and_between_subpackages() -> None:
    relative = ast.parse("from . import b\nfrom .c import x\nif T:\n    from rte.p.q import d\n")
    assert _imported("rte.p.a", False, relative, {"rte.p.b", "rte.p.c", "rte.p.q.d"}) == {
        "rte.p.b",
        "rte.p.c",
        "rte.p.q.d",
    }
    assert _circles({"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.a"}}) == [["p.a", "p.b"]]
    # Two subpackages leaning on each other through different modules: a circle at p.
    assert _circles({"p.x.a": {"p.y.b"}, "p.y.b": set(), "p.y.c": {"p.x.d"}, "p.x.d": set()}) == [
        ["p.x", "p.y"]
    ]
    assert _circles({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": set()}) == []


_COMMAND = re.compile(r"^@[\w.]*\bcommand\(", re.MULTILINE)


def test_every_command_is_defined_in_rte_commands() -> None:
    """rte.cli only assembles groups; a command's options live beside the other commands'."""
    commands = PACKAGE / "commands"
    outside = [
        path.relative_to(ROOT).as_posix()
        for path in _modules()
        if commands not in path.parents and _COMMAND.search(path.read_text(encoding="utf-8"))
    ]
    assert outside == []
    assert _COMMAND.search('@main.command("fit")\n') and _COMMAND.search("@click.command(\n")
