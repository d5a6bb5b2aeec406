"""Load the ``kubernetes`` client without the parts of the package the agent never uses.

``import kubernetes.client`` first runs the package's ``__init__``, which imports every part of
it: the dynamic client (with ``kubernetes_validate``, ``jsonschema``, ``referencing`` and
``rpds``), websocket streams, ``utils`` (create from YAML), leader election and informers. The
agent uses ``client`` and ``config`` only; the rest was 3.8 MiB of its resident memory
(``python -m bench.bench_agent``, issue #13's RSS budget of 72 MiB).

Python imports a submodule through its package's ``__path__``; a package module that has one
and nothing else lets ``import kubernetes.client`` and ``from kubernetes import config`` work
as usual (each loads only what it needs), and any other part still loads when imported by name.
"""

from __future__ import annotations

import importlib.util
import sys
import types


def kubernetes_parts_on_demand() -> bool:
    """Register ``kubernetes`` as a bare package, unless it is imported already or not installed.

    True when registered. Must run before anything imports ``kubernetes``.
    """
    if "kubernetes" in sys.modules:
        return False
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return False
    package = types.ModuleType("kubernetes")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    sys.modules["kubernetes"] = package
    return True
