"""Import a script of hack/ by its path: hack/ holds scripts, not an importable package."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers.paths import HACK


def load_script(name: str) -> ModuleType:
    """``hack/<name>.py`` as a module (its ``main`` not run), loaded once per test session."""
    module_name = f"hack_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, HACK / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no script hack/{name}.py"
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
