"""rte loads the kubernetes client without the package's other parts (resident memory)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

_PROBE = """
import sys
from rte.runtime.kubeimport import kubernetes_parts_on_demand
assert kubernetes_parts_on_demand()
assert not kubernetes_parts_on_demand()  # once only
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
assert client.CustomObjectsApi and client.CoordinationV1Api and client.V1Lease and config.load_kube_config
print(sorted(m for m in sys.modules if m.split(".")[0] in ("jsonschema", "referencing", "websocket")
             or m.startswith(("kubernetes.dynamic", "kubernetes.stream", "kubernetes.informer"))))
import kubernetes.watch  # another part still loads when named
print(kubernetes.watch.Watch.__name__)
"""


def _run(probe: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return run.stdout.split("\n")


def test_the_client_and_config_load_without_the_dynamic_client_streams_or_informers() -> None:
    assert _run(_PROBE)[:2] == ["[]", "Watch"]


def test_the_bare_package_resolves_its_attributes_as_the_real_one_does() -> None:
    # Code that does ``import kubernetes`` and then uses ``kubernetes.<part>`` (as kubernetes.dynamic
    # reads ``__version__``) finds what the package's own __init__ would have defined.
    probe = """
from rte.runtime.kubeimport import kubernetes_parts_on_demand
assert kubernetes_parts_on_demand()
import kubernetes
print(kubernetes.__project__, kubernetes.__version__, kubernetes.watch.Watch.__name__)
try:
    kubernetes.no_such_part
except AttributeError as e:
    print(e)
"""
    assert _run(probe)[:2] == [
        f"kubernetes {version('kubernetes')} Watch",
        "module 'kubernetes' has no attribute 'no_such_part'",
    ]


def test_a_package_already_imported_is_left_alone() -> None:
    probe = "import kubernetes\nfrom rte.runtime.kubeimport import kubernetes_parts_on_demand\n"
    probe += "print(kubernetes_parts_on_demand())"
    assert _run(probe)[0] == "False"
