"""Compile the bytecode of the modules rte's commands import, and of nothing else.

Run by deploy/Containerfile's build stage with the image's own Python, after rte and its
dependencies are installed into the environment:

    /opt/rte/bin/python -B compile_imported.py [PREFIX]

PREFIX (default: the environment, ``sys.prefix``) limits what is compiled to the files below it:
Debian's standard library comes compiled with its packages.

The container's root is read-only and its environment sets PYTHONDONTWRITEBYTECODE, so a module
imported without its ``.pyc`` is compiled again at every start (a third of ``rte dump``'s CPU).
Compiling everything under the environment's lib/ costs about 100 MB of bytecode, most of it for
files no command ever loads (test suites, vendored tools, unused submodules). This script
compiles what is loaded instead: it imports every rte module, and every module any rte source
file imports anywhere (function-level imports too, found by parsing the sources, so the agent's
and the extender's lazily loaded Kubernetes client, gRPC and YAML come in), then compiles the
files of everything that ended up in ``sys.modules`` under the environment's prefix.

Imports that do not resolve here (typing-only modules, optional extras the image lacks) are
skipped and counted. ``hack/check_bytecode.py`` runs in the finished image and fails when a
module a real command imported has no ``.pyc``.

``unchecked-hash``: the ``.pyc`` files do not depend on file times surviving the image's COPY.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import py_compile
import sys
from pathlib import Path


def rte_sources() -> dict[str, Path]:
    """Each module of the installed rte package by its dotted name (``__main__`` excluded: it
    runs the CLI)."""
    spec = importlib.util.find_spec("rte")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("compile_imported: rte is not installed in this Python")
    root = Path(next(iter(spec.submodule_search_locations)))
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["rte", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def named_imports(path: Path) -> set[str]:
    """Every absolute module name a source file imports, at any depth of its code; for ``from X
    import Y`` both X and X.Y (Y may be a submodule); and each literal name given to
    ``importlib.import_module`` (the extender's ``numpy.ma``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except (Exception, SystemExit):
        return False
    return True


def main(argv: list[str]) -> int:
    sources = rte_sources()
    named: set[str] = set()
    for path in sources.values():
        named |= named_imports(path)
    # rte's own modules first, so that what they set up at import (rte.runtime.kubeimport's bare
    # kubernetes package) is in place before the names imported only in functions.
    order = sorted(sources) + sorted(named - set(sources))
    skipped = [name for name in order if not importable(name)]
    prefix = Path(argv[0] if argv else sys.prefix).resolve()
    files: set[Path] = set()
    for module in list(sys.modules.values()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if origin and origin.endswith(".py") and Path(origin).resolve().is_relative_to(prefix):
            files.add(Path(origin))
    for file in sorted(files):
        py_compile.compile(
            str(file),
            cfile=importlib.util.cache_from_source(str(file)),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    # Most skipped names are attributes (from X import function), not modules: a count is enough.
    print(f"compile_imported: {len(files)} modules compiled under {prefix}; {len(skipped)} names not modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
