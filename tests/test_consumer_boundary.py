"""The consumer imports the shared model, never the node agent, gRPC or a Kubernetes client."""

import json
import pkgutil
import subprocess
import sys

import rte.consumer

FORBIDDEN = ("rte.agent", "rte.host", "rte.podres", "grpc", "kubernetes")


def test_consumer_modules_do_not_pull_in_agent_grpc_or_kubernetes_code() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(rte.consumer.__path__, "rte.consumer."))
    assert "rte.consumer.filter" in modules and "rte.consumer.score" in modules
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
