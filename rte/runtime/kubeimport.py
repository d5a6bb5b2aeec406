"""Load the ``kubernetes`` client without the parts of the package rte never uses.

``import kubernetes.client`` first runs the package's ``__init__``, which imports every part of
it: the dynamic client (with ``kubernetes_validate``, ``jsonschema``, ``referencing`` and
``rpds``), websocket streams, ``utils`` (create from YAML), leader election and informers. rte
uses ``client`` and ``config`` only; the rest was 3.8 MiB of the agent's resident memory
(``python -m bench.bench_agent``, issue #13's RSS budget of 72 MiB) and is as much in the
extender's in-cluster path and in the commands that read a cluster.

Python imports a submodule through its package's ``__path__``; a package module that has one
and nothing else lets ``import kubernetes.client`` and ``from kubernetes import config`` work
as usual (each loads only what it needs). The package's attributes still resolve on first use,
as they would after the real ``__init__``: ``kubernetes.watch`` after a bare ``import
kubernetes`` imports that part then, and ``__version__`` (which ``kubernetes.dynamic`` reads)
comes from the installed distribution's metadata.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

_PACKAGE = "kubernetes"


def _package_attribute(name: str) -> Any:
    """The bare package's module ``__getattr__`` (PEP 562): what the real ``__init__`` defined."""
    if name == "__project__":
        return _PACKAGE
    if name == "__version__":
        from importlib.metadata import version

        return version(_PACKAGE)
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{_PACKAGE}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{_PACKAGE}.{name}":
            raise  # the part exists but something it needs does not
        raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}") from None


def kubernetes_parts_on_demand() -> bool:
    """Register ``kubernetes`` as a bare package, unless it is imported already or not installed.

    True when registered. Must run before anything imports ``kubernetes``; later calls (and
    calls after the full package was imported) change nothing and return False.
    """
    if _PACKAGE in sys.modules:
        return False
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return False
    package = types.ModuleType(_PACKAGE)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__getattr__ = _package_attribute  # type: ignore[method-assign]
    sys.modules[_PACKAGE] = package
    return True
