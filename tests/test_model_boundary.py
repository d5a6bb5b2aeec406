"""The shared model is pure: no gRPC, sysfs, udev, psutil or Kubernetes client code behind it."""

import json
import pkgutil
import subprocess
import sys

import rte.model

FORBIDDEN = ("rte.agent", "rte.host", "rte.podres", "rte.consumer", "grpc", "kubernetes", "pyudev", "psutil")


def test_model_modules_import_nothing_from_the_edges() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(rte.model.__path__, "rte.model."))
    expected = {"rte.model.quantity", "rte.model.fingerprint", "rte.model.nrt", "rte.model.topology"}
    assert expected <= set(modules)
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    loaded = json.loads(out.stdout)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert offending == []
