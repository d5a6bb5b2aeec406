"""Import boundaries: the shared model is pure, the consumer never pulls in agent code, and the
daemons' plumbing (rte.runtime) stays below the daemons.

Each package is imported in a fresh interpreter, so modules loaded by other tests cannot hide
a violation.
"""

import json
import pkgutil
import subprocess
import sys

import pytest

import rte.consumer
import rte.model
import rte.runtime

EDGES = ("rte.agent", "rte.host", "rte.podres", "rte.runtime", "grpc", "kubernetes")
ABOVE_RUNTIME = ("rte.agent", "rte.extender", "rte.consumer", "rte.sim", "rte.commands", "rte.cli")


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
        # The daemons' plumbing sits below them and loads the Kubernetes client only on demand.
        (rte.runtime, {"rte.runtime.ratelimit", "rte.runtime.reflector"}, (*ABOVE_RUNTIME, "kubernetes")),
    ],
    ids=["model", "consumer", "runtime"],
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
