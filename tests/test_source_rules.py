"""Rules the source of ``rte/`` keeps: one definition per public name, modules of one screenful.

Both read the source text; nothing is imported.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rte"
MAX_MODULE_LINES = 450

ALLOWED_TWICE: dict[str, str] = {
    # Two API-client factories (agent and extender): fixed on the daemons branch (one factory).
    "load_api_client": "rte/agent/kube.py rte/extender/app.py",
    # The simulator's option parser beside rte.durations: fixed on the settings branch.
    "parse_duration": "rte/durations.py rte/sim/specs.py",
}
"""Names allowed in two modules, with the modules. An entry that no longer applies fails too."""


def _modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_pb2" not in path.name:  # generated gRPC stubs
            yield path


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
    for path in _modules():
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
