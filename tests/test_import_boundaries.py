"""Import boundaries: the shared model is pure, and the consumer never pulls in agent code.

Each package is imported in a fresh interpreter, so modules loaded by other tests cannot hide
a violation.
"""

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rte.consumer
import rte.model

EDGES = ("rte.agent", "rte.host", "rte.podres", "grpc", "kubernetes")


def _loaded_after_importing(modules: list[str]) -> list[str]:
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return list(json.loads(out.stdout))


@pytest.mark.parametrize(
    ("package", "must_have", "forbidden"),
    [
        (
            rte.model,
            {"rte.model.quantity", "rte.model.fingerprint", "rte.model.nrt", "rte.model.topology"},
            (*EDGES, "rte.consumer", "pyudev", "psutil"),
        ),
        (rte.consumer, {"rte.consumer.filter", "rte.consumer.score", "rte.consumer.cache"}, EDGES),
    ],
    ids=["model", "consumer"],
)
def test_package_imports_nothing_beyond_its_boundary(
    package: object, must_have: set[str], forbidden: tuple[str, ...]
) -> None:
    prefix = package.__name__ + "."  # type: ignore[attr-defined]
    modules = sorted(m.name for m in pkgutil.iter_modules(package.__path__, prefix))  # type: ignore[attr-defined]
    assert must_have <= set(modules)
    loaded = _loaded_after_importing(modules)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden)]
    assert offending == []


RTE = Path(rte.model.__file__).resolve().parents[1]


def _imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _importers_of(target: str, under: Path) -> list[str]:
    return sorted(
        str(path.relative_to(RTE.parent))
        for path in under.rglob("*.py")
        if any(m == target or m.startswith(target + ".") for m in _imports_of(path))
    )


def test_nothing_below_the_command_line_imports_it() -> None:
    # rte/__main__.py is the `python -m rte` entry point, above the CLI.
    assert _importers_of("rte.cli", RTE) == ["rte/__main__.py"]


def test_the_extender_and_the_settings_never_import_the_commands() -> None:
    assert _importers_of("rte.commands", RTE / "extender") == []
    assert _importers_of("rte.commands", RTE / "settings") == []
    assert _importers_of("rte.commands", RTE / "consumer") == []
