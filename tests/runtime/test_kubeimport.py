"""rte loads the kubernetes client without the package's other parts (resident memory)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from tests.helpers.in_pod import run_in_pod

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


_IN_CLUSTER = """
import sys
from rte.runtime.kubeimport import kubernetes_parts_on_demand
assert kubernetes_parts_on_demand()
import kubernetes.config.incluster_config as incluster
incluster.SERVICE_TOKEN_FILENAME, incluster.SERVICE_CERT_FILENAME = sys.argv[1:3]
from rte.runtime.kubeclient import Source, load_api_client
api = load_api_client(sources=(Source.IN_CLUSTER,))
print(api.configuration.host)
heavy = ("requests", "requests_oauthlib", "oauthlib", "google", "kubernetes.config.kube_config",
         "kubernetes.utils.create_from_yaml", "kubernetes.utils.metrics", "durationpy")
print(sorted(h for h in heavy if h in sys.modules))
from kubernetes import config  # a name only the package's __init__ defines completes it
from kubernetes.config.config_exception import ConfigException
print(config.load_kube_config.__name__, config.ConfigException is ConfigException, end=" ")
print(config.load_config.__name__)
import kubernetes.utils.retry  # what the REST client imported, the module it already has
from kubernetes import utils
print(utils.retry is kubernetes.utils.retry, utils.create_from_yaml.__name__, utils.parse_duration("1m"))
"""


def test_the_in_cluster_configuration_loads_without_the_kubeconfig_machinery(tmp_path: Path) -> None:
    run = run_in_pod(tmp_path, _IN_CLUSTER, token="t0ken\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:4] == [
        "https://10.96.0.1:443",
        "[]",
        "load_kube_config True load_config",
        "True create_from_yaml 0:01:00",
    ]
