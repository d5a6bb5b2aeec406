"""The agent loads the kubernetes client without the package's other parts (resident memory)."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
from rte.agent.kubeimport import kubernetes_parts_on_demand
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


def test_the_client_and_config_load_without_the_dynamic_client_streams_or_informers() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "Watch"]


def test_a_package_already_imported_is_left_alone() -> None:
    probe = "import kubernetes\nfrom rte.agent.kubeimport import kubernetes_parts_on_demand as k\nprint(k())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
