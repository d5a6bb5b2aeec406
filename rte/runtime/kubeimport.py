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
comes from the installed distribution's metadata. ``kubernetes.config`` and ``kubernetes.utils``
are kept bare the same way until a name only their ``__init__`` defines is used (see
``_SUBPACKAGES``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

_PACKAGE = "kubernetes"
_SUBPACKAGES = {"kubernetes.config": True, "kubernetes.utils": False}
"""Packages of their own kept bare too. ``config``'s ``__init__`` imports ``kube_config`` (and
with it ``requests``, ``requests_oauthlib``, ``oauthlib`` and ``google.auth``, 5 MiB and 150 ms),
which the in-cluster configuration, the extender's and the agent's deployed path, never uses.
``utils``'s imports ``create_from_yaml``, the metrics helpers and ``durationpy``, 0.8 MiB, when
the REST client needs only its ``retry`` and ``keepalive`` modules. The flag: whether a name that
is a submodule resolves to it without completing the package; not for ``utils``, whose
``__init__`` rebinds ``create_from_yaml`` from the submodule to the function of that name."""


def _part(package: str, name: str) -> Any:
    """``package.name`` imported as a submodule, or AttributeError when there is no such part."""
    try:
        return importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{package}.{name}":
            raise  # the part exists but something it needs does not
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None


def _package_attribute(name: str) -> Any:
    """The bare ``kubernetes``'s module ``__getattr__`` (PEP 562): what its ``__init__`` defined."""
    if name == "__project__":
        return _PACKAGE
    if name == "__version__":
        from importlib.metadata import version

        return version(_PACKAGE)
    if name.startswith("__"):
        raise AttributeError(name)
    return _part(_PACKAGE, name)


def _completing(package: str, submodules: bool) -> Any:
    """The ``__getattr__`` of a bare subpackage (``kubernetes.config``, ``kubernetes.utils``): a
    submodule, else the package completed.

    A name only its ``__init__`` defines (``load_kube_config``, ``ConfigException``,
    ``create_from_yaml``...) runs that ``__init__`` in the module once, so that from then on the
    module is the real one.
    """

    def attribute(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            if not submodules:
                raise AttributeError(name)
            return _part(package, name)
        except AttributeError:
            module = sys.modules[package]
            del module.__getattr__  # the real __init__ defines every name; no second completion
            spec = module.__spec__
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(module)
            return getattr(module, name)

    return attribute


def _register_bare(name: str, spec: importlib.machinery.ModuleSpec, getattr_: Any) -> None:
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations or ())
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__getattr__ = getattr_  # type: ignore[method-assign]
    sys.modules[name] = package


def kubernetes_parts_on_demand() -> bool:
    """Register ``kubernetes`` (and ``kubernetes.config``) as bare packages, unless ``kubernetes``
    is imported already or not installed.

    True when registered. Must run before anything imports ``kubernetes``; later calls (and
    calls after the full package was imported) change nothing and return False.
    """
    if _PACKAGE in sys.modules:
        return False
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return False
    _register_bare(_PACKAGE, spec, _package_attribute)
    for name, submodules in _SUBPACKAGES.items():
        part = importlib.util.find_spec(name)
        if part is not None and part.submodule_search_locations is not None:
            _register_bare(name, part, _completing(name, submodules))
            setattr(sys.modules[_PACKAGE], name.rsplit(".", 1)[1], sys.modules[name])
    return True
