"""What the wheel (and so the image) holds: rte's packages without the test doubles.

The packages are found as setuptools finds them for ``pip wheel .``, from the same
``[tool.setuptools.packages.find]`` table; building a real wheel (about 20 s) is what the check
in docs/architecture.md shows by hand.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, find_packages

ROOT = Path(__file__).resolve().parent.parent


def _wheel_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    assert find.get("namespaces", True), "setuptools finds namespace packages by default"
    found = find_namespace_packages(str(ROOT), include=find["include"], exclude=find.get("exclude", ()))
    return set(found)


def test_the_wheel_holds_no_test_double() -> None:
    packages = _wheel_packages()
    assert "rte.testing" not in packages
    assert not [p for p in packages if p.startswith("rte.testing.")]


def test_the_wheel_holds_every_other_package_of_rte() -> None:
    every = set(find_packages(str(ROOT), include=["rte*"]))
    assert {"rte", "rte.agent.compute", "rte.consumer.kernel", "rte.testing.apiserver"} <= every
    assert every - _wheel_packages() == {"rte.testing", "rte.testing.apiserver"}
