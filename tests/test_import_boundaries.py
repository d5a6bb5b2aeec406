"""Import boundaries at run time: what importing a package really loads, and who imports whom
where a layer contract cannot say it (nothing but tests and people import the test doubles in
rte.testing; nothing below the command line imports it; the daemons' plumbing, rte.runtime,
loads the Kubernetes client only on demand).

``lint-imports`` (the contracts in pyproject.toml) checks the import statements of rte; it cannot
see what third-party packages import in turn, nor imports made by name at run time. Here each
package is imported in a fresh interpreter, so modules loaded by other tests cannot hide a
violation, and every module that ends up loaded counts.
"""

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rte
import rte.agent
import rte.cluster
import rte.consumer
import rte.model
import rte.runtime

EDGES = ("rte.agent", "rte.host", "rte.podres", "rte.runtime", "grpc", "kubernetes")
ABOVE_RUNTIME = (
    "rte.agent",
    "rte.extender",
    "rte.consumer",
    "rte.sim",
    "rte.cluster",
    "rte.commands",
    "rte.cli",
)


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
        (
            rte.agent,
            {"rte.agent.loop", "rte.agent.publish.publisher", "rte.agent.watch.podwatch"},
            ("numpy", "matplotlib"),
        ),
        # The daemons' plumbing sits below them and loads the Kubernetes client only on demand.
        (rte.runtime, {"rte.runtime.ratelimit", "rte.runtime.reflector"}, (*ABOVE_RUNTIME, "kubernetes")),
        # The cluster views are a front end of the consumer: no agent side; the client on demand.
        (
            rte.cluster,
            {"rte.cluster.reader", "rte.cluster.status", "rte.cluster.shortfall"},
            ("rte.agent", "rte.host", "rte.podres", "grpc", "pyudev", "kubernetes"),
        ),
    ],
    ids=["model", "consumer", "agent", "runtime", "cluster"],
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


def test_the_agents_commands_load_no_numpy() -> None:
    # `rte run` and `rte dump` go through the command line; NumPy belongs to the consumer's kernel.
    loaded = _loaded_after_importing(["rte.cli", "rte.commands.run", "rte.commands.dump"])
    assert [m for m in loaded if m.split(".")[0] in ("numpy", "matplotlib")] == []
    assert [m for m in loaded if m.startswith("rte.consumer.kernel")] == []


LARGEST_SYSFS = Path(__file__).parent / "fixtures/sysfs/dell-r640-2s-xeon6230r-2numa-sriov-vfs/sys"


def test_a_plain_sysfs_dump_loads_no_grpc_kubernetes_yaml_or_numpy() -> None:
    # `rte dump --no-kubelet` is a start-up-bound command (issue #27: at most 5x a bare
    # interpreter start): it reads sysfs and prints JSON, so the gRPC runtime, the Kubernetes
    # client, YAML and NumPy (each tens of milliseconds of import) must stay out of it.
    script = (
        "import json, runpy, sys\n"
        f"sys.argv = ['rte', 'dump', '--sysfs', {str(LARGEST_SYSFS)!r}, '--no-kubelet', '-o', 'json']\n"
        "try:\n"
        "    runpy.run_module('rte', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert json.loads(run.stdout)["kind"] == "NodeResourceTopology"
    loaded = json.loads(run.stderr.splitlines()[-1])
    heavy = ("grpc", "google", "kubernetes", "urllib3", "yaml", "numpy", "prometheus_client", "pydantic")
    assert [m for m in loaded if m.split(".")[0] in heavy] == []


def _imported_names(path: Path, package: str) -> set[str]:
    """Every module an ``import`` in ``path`` names, function-level imports included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_no_module_outside_rte_testing_imports_the_doubles() -> None:
    root = Path(rte.__file__).parent
    offending = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[:2] == ("rte", "testing"):
            continue
        named = _imported_names(path, package=".".join(parts[:-1]))
        offending += [f"{'/'.join(parts)}: {n}" for n in sorted(named) if n.startswith("rte.testing")]
    assert offending == []


def test_the_commands_load_neither_the_doubles_nor_their_test_dependencies() -> None:
    modules = sorted(
        m.name
        for m in pkgutil.walk_packages(rte.__path__, "rte.")
        if not m.name.startswith("rte.testing") and not m.name.endswith(".__main__")
    )
    assert {"rte.cli", "rte.commands.run", "rte.commands.dump"} <= set(modules)
    loaded = _loaded_after_importing(modules)
    assert [m for m in loaded if m.split(".")[0] == "jsonschema" or m.startswith("rte.testing")] == []


def test_the_apiserver_double_without_jsonschema_names_the_extra_to_install() -> None:
    script = "import sys\nsys.modules['jsonschema'] = None\nimport rte.testing.apiserver\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: rte.testing.apiserver needs jsonschema to validate custom resources: "
        "pip install 'rte[test]'"
    )


def _importers_of(target: str, under: Path) -> list[str]:
    """The modules under ``under`` that import ``target`` or one of its submodules, anywhere."""
    root = Path(rte.__file__).parent
    found = []
    for path in sorted(under.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        named = _imported_names(path, package=".".join(parts[:-1]))
        if any(n == target or n.startswith(target + ".") for n in named):
            found.append("/".join(parts) + ".py")
    return found


def test_nothing_below_the_command_line_imports_it() -> None:
    # rte/__main__.py is the `python -m rte` entry point, above the CLI.
    assert _importers_of("rte.cli", Path(rte.__file__).parent) == ["rte/__main__.py"]


def test_the_extender_and_the_settings_never_import_the_commands() -> None:
    root = Path(rte.__file__).parent
    assert _importers_of("rte.commands", root / "extender") == []
    assert _importers_of("rte.commands", root / "settings") == []
    assert _importers_of("rte.commands", root / "consumer") == []
