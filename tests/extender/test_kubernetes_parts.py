"""The extender's cluster client path loads only the ``client`` and ``config`` parts of the
``kubernetes`` package (rte.runtime.kubeimport), and no generated ``CoreV1Api`` or
``CustomObjectsApi``: watches, leader election and the leader's EndpointSlice all run on them.
The extender runs in a process of its own (the apiserver double, which validates with
``jsonschema``, stays in the test's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rte.testing.apiserver import FakeApiServer
from tests.helpers.paths import REPO

_EXTENDER = """
import sys, time, urllib.request
from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings

assert "kubernetes" not in sys.modules
settings = extender_settings(
    listen="127.0.0.1:0",
    kubeconfig=sys.argv[1],
    leader_elect=True,
    leader_elect_lease_namespace="rte",
    leader_elect_service="rte-extender",
    leader_elect_advertise_address="127.0.0.1",
)
app = ExtenderApp(settings).start()
try:
    deadline = time.monotonic() + 60
    while not app.leadership.serving():
        assert time.monotonic() < deadline, "never became the leader"
        time.sleep(0.05)
    while True:
        try:
            with urllib.request.urlopen(app.server.url + "/readyz", timeout=10) as r:
                break
        except OSError:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.05)
finally:
    app.stop()
print(sorted({m.split(".")[0] if not m.startswith("kubernetes") else ".".join(m.split(".")[:2])
              for m in sys.modules}
             & {"jsonschema", "referencing", "kubernetes_validate", "websocket", "kubernetes.dynamic",
                "kubernetes.stream", "kubernetes.informer", "kubernetes.leaderelection", "kubernetes.watch",
                "kubernetes.client", "kubernetes.config"}))
generated = ("kubernetes.client.api.core_v1_api", "kubernetes.client.api.custom_objects_api")
print([m for m in generated if m in sys.modules])
"""


def test_the_extender_runs_on_the_client_and_config_parts_only(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _EXTENDER, str(fake_kubeconfig)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # Nor the generated CoreV1Api (20 MiB) and CustomObjectsApi: lists and watches are plain GETs.
    assert run.stdout.split("\n")[:2] == ["['kubernetes.client', 'kubernetes.config']", "[]"]
    assert fake_apiserver.get_object("endpointslices", "rte-extender-leader", "rte") is not None
