"""Import boundaries at run time: what importing a package really loads.

``lint-imports`` (the contracts in pyproject.toml) checks the import statements of rte; it cannot
see what third-party packages import in turn, nor imports made by name at run time. Here each
package is imported in a fresh interpreter, so modules loaded by other tests cannot hide a
violation, and every module that ends up loaded counts.
"""

import json
import pkgutil
import subprocess
import sys

import pytest

import rte.agent
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
        (
            rte.consumer,
            {"rte.consumer.filter", "rte.consumer.score", "rte.consumer.cache.overreserve"},
            EDGES,
        ),
        # The agent stays light: none of its dependencies may drag NumPy in either.
        (rte.agent, {"rte.agent.loop", "rte.agent.publisher", "rte.agent.podwatch"}, ("numpy", "matplotlib")),
    ],
    ids=["model", "consumer", "agent"],
)
def test_package_imports_nothing_beyond_its_boundary(
    package: object, must_have: set[str], forbidden: tuple[str, ...]
) -> None:
    prefix = package.__name__ + "."  # type: ignore[attr-defined]
    modules = sorted(m.name for m in pkgutil.walk_packages(package.__path__, prefix))  # type: ignore[attr-defined]
    assert must_have <= set(modules)
    loaded = _loaded_after_importing(modules)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden)]
    assert offending == []
