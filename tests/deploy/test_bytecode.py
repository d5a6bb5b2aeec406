"""The image's bytecode: hack/compile_imported.py compiles what rte imports and nothing else, and
hack/check_bytecode.py (run inside the image by hack/build-image.sh) names an imported module
without its ``.pyc``. The image build itself runs in .ci/run."""

from __future__ import annotations

import importlib.util
import py_compile
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from tests.helpers.paths import HACK


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hack_{name}", HACK / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_compile_imported_compiles_every_imported_module_and_none_other(tmp_path: Path) -> None:
    """A stand-in ``rte`` whose modules import a helper package at module level, in a function
    and by a literal ``importlib.import_module`` name: those and rte's own modules get their
    ``.pyc``; the helper's module that nothing imports, and ``rte/__main__.py``, do not."""
    site = tmp_path / "site"
    write(site / "rte" / "__init__.py", "")
    write(site / "rte" / "__main__.py", "raise SystemExit('__main__ must not be imported')\n")
    write(site / "rte" / "top.py", "import helper.eager\n")
    write(
        site / "rte" / "lazy.py",
        """
        import importlib

        def later():
            from helper.lazy import thing
            importlib.import_module("helper.byname")
            return thing
        """,
    )
    write(site / "helper" / "__init__.py", "")
    for name in ("eager", "lazy", "byname", "unused"):
        write(site / "helper" / f"{name}.py", "thing = 1\n")

    result = subprocess.run(
        [sys.executable, "-B", str(HACK / "compile_imported.py"), str(site)],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "modules compiled under" in result.stdout

    compiled = {
        str(path.relative_to(site))
        for path in site.rglob("*.py")
        if Path(importlib.util.cache_from_source(str(path))).exists()
    }
    assert compiled == {
        "rte/__init__.py",
        "rte/top.py",
        "rte/lazy.py",
        "helper/__init__.py",
        "helper/eager.py",
        "helper/lazy.py",
        "helper/byname.py",
    }


def test_check_bytecode_names_an_imported_module_without_its_pyc(tmp_path: Path) -> None:
    check = load_script("check_bytecode")
    source = write(tmp_path / "plain.py", "x = 1\n")
    spec = importlib.util.spec_from_file_location("plain", source)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)

    assert check.uncompiled({"plain": module}) == [f"plain ({source})"]

    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True)
    assert check.uncompiled({"plain": module}) == []


def test_check_bytecode_ignores_builtin_and_extension_modules() -> None:
    check = load_script("check_bytecode")
    import _socket  # an extension module (a .so) in Debian's and the official image's Python

    assert check.uncompiled({"sys": sys, "_socket": _socket}) == []
