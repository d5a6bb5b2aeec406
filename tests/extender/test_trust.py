"""Who may call the extender: the verbs and /state over TLS with a client CA, probes in plain HTTP.

The whole app runs (file-fed NRTs) with real certificates made in the test.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rte.errors import ConfigError
from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from tests.helpers.extender import GI, pod
from tests.helpers.paths import REPO
from tests.helpers.tlscerts import Pem, Pki, make_pki

ARGS = {"Pod": pod("p", {"cpu": 2, "memory": 4 * GI}), "NodeNames": ["worker-a", "worker-b"]}
NRT_FILE = REPO / "examples" / "nrt-two-nodes.yaml"
REFUSED = (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def app(pki: Pki) -> Iterator[ExtenderApp]:
    settings = extender_settings(
        listen="127.0.0.1:0",
        probe_listen="127.0.0.1:0",
        nrt_files=[str(NRT_FILE)],
        tls_cert_file=str(pki.server.cert),
        tls_private_key_file=str(pki.server.key),
        client_ca_file=str(pki.ca.path),
    )
    with ExtenderApp(settings) as extender:
        yield extender


def https(app: ExtenderApp, pki: Pki, identity: Pem | None, method: str, path: str, body: Any = None) -> int:
    assert app.server is not None
    context = ssl.create_default_context(cafile=pki.ca.path)
    if identity is not None:
        context.load_cert_chain(identity.cert, identity.key)
    conn = http.client.HTTPSConnection("127.0.0.1", app.server.port, context=context, timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body))
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def plain(app: ExtenderApp, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any] | str]:
    assert app.probe_server is not None
    conn = http.client.HTTPConnection("127.0.0.1", app.probe_server.port, timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body))
        response = conn.getresponse()
        data = response.read().decode()
        return response.status, json.loads(data) if data.startswith("{") else data
    finally:
        conn.close()


def test_the_verbs_and_state_answer_only_a_client_of_the_client_ca(app: ExtenderApp, pki: Pki) -> None:
    assert https(app, pki, pki.client, "POST", "/filter", ARGS) == 200
    assert https(app, pki, pki.client, "POST", "/prioritize", ARGS) == 200
    assert https(app, pki, pki.client, "GET", "/state") == 200
    for identity in (None, pki.stranger):
        for method, path in (("POST", "/filter"), ("GET", "/state")):
            with pytest.raises(REFUSED):
                https(app, pki, identity, method, path, ARGS if method == "POST" else None)


def test_the_probe_port_serves_probes_and_metrics_in_plain_http_and_nothing_else(app: ExtenderApp) -> None:
    assert plain(app, "GET", "/healthz")[0] == 200
    assert plain(app, "GET", "/readyz")[0] == 200
    status, metrics = plain(app, "GET", "/metrics")
    assert status == 200 and "rte_extender_is_leader 1.0" in str(metrics)
    status, error = plain(app, "GET", "/state")
    assert status == 404 and "--listen" in str(error)
    status, error = plain(app, "POST", "/filter", ARGS)
    assert status == 404 and "--listen" in str(error)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ({"tls_cert_file": "a.crt", "tls_private_key_file": "a.key"}, "--client-ca-file"),
        ({"client_ca_file": "ca.crt"}, "--tls-cert-file"),
        ({"leader_elect": True, "nrt_files": ["x.yaml"]}, "--leader-elect"),
        ({"leader_elect": True, "leader_elect_service": "rte-extender"}, "--leader-elect-advertise-address"),
        ({"leader_elect_service": "rte-extender"}, "--leader-elect-service"),
        ({"leader_elect": True, "leader_elect_renew_deadline": "20s"}, "--leader-elect-lease-duration"),
        ({"probe_listen": "nowhere"}, "--probe-listen"),
    ],
)
def test_incomplete_trust_settings_are_refused_naming_the_setting(flags: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        extender_settings(**flags)


def test_unusable_certificate_files_stop_the_start_with_one_line(pki: Pki, tmp_path: Path) -> None:
    settings = extender_settings(
        listen="127.0.0.1:0",
        nrt_files=[str(NRT_FILE)],
        tls_cert_file=str(pki.server.cert),
        tls_private_key_file=str(pki.server.key),
        client_ca_file=str(tmp_path / "absent-ca.crt"),
    )
    with pytest.raises(ConfigError, match=r"absent-ca\.crt"):
        ExtenderApp(settings).start()
