"""Fail when a module that rte's commands import has no compiled bytecode beside it.

Run inside the image by hack/build-image.sh (as the image's non-root user, so nothing under
/opt/rte or /usr is writable, and with the image's PYTHONDONTWRITEBYTECODE=1):

    python3 check_bytecode.py dump --sysfs /fixture/sys

It runs the rte command given as arguments in this process (``rte.cli.main``), then imports
the modules ``rte run`` and ``rte extender`` load before they start serving (their command
modules and apps, with their lazily imported clients), and lists every module in
``sys.modules`` whose source file has no ``.pyc`` at its cache path: in the running container
Python would compile each of those again at every start, because it cannot write the cache.
Exit status 1 with the list, 0 with a count.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import sys

# What the agent (`rte run`) and the extender (`rte extender`) import before serving, beyond
# what the command run above loads: each app module and the clients they import in functions
# (rte/agent/app.py, rte/runtime/kubeclient.py, rte/extender/app.py).
SERVING_MODULES = (
    "rte.commands.run",
    "rte.commands.extender",
    "rte.agent.app",
    "rte.agent.load",
    "rte.agent.publish.heartbeat",
    "rte.agent.publish.publisher",
    "rte.agent.watch.nrtwatch",
    "rte.agent.watch.podwatch",
    "rte.extender.app",
    "numpy.ma",  # ExtenderApp.start imports it by name
    "rte.extender.watch",
    "rte.extender.endpoint",
    "rte.runtime.kubeclient",
    "rte.runtime.kubeconfig",
    "rte.runtime.restclient",
    "rte.podres.client",
    "rte.podres.reader",
    "kubernetes.client",
    "kubernetes.config.incluster_config",
    "kubernetes.config.kube_config",
    "grpc",
    "yaml",
    "urllib3",
)


def uncompiled(modules: dict[str, object]) -> list[str]:
    """Names of the modules loaded from a ``.py`` file with no ``.pyc`` at its cache path."""
    missing = []
    for name, module in sorted(modules.items()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if not origin or not origin.endswith(".py") or not os.path.exists(origin):
            continue  # built-in, frozen, extension module, or this script itself (__main__)
        if name == "__main__":
            continue
        if not os.path.exists(importlib.util.cache_from_source(origin)):
            missing.append(f"{name} ({origin})")
    return missing


def main(argv: list[str]) -> int:
    if argv:
        from rte.cli import main as rte_main

        # The command's own output is not this check's: only its imports count.
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                rte_main(argv, prog_name="rte", standalone_mode=False)
        except SystemExit as e:
            if e.code:
                print(f"check_bytecode: rte {' '.join(argv)} failed ({e.code})", file=sys.stderr)
                return 2
    for name in SERVING_MODULES:
        importlib.import_module(name)
    missing = uncompiled(dict(sys.modules))
    if missing:
        print(f"check_bytecode: {len(missing)} imported modules have no .pyc:", file=sys.stderr)
        for line in missing:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"check_bytecode: all {len(sys.modules)} imported modules have their .pyc")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
