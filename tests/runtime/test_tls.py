"""The HTTP server over real TLS with a required client CA: who gets in, who does not, and renewal.

Certificates are made in the test (:mod:`tests.helpers.tlscerts`); every handshake is real.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rte.errors import ConfigError
from rte.runtime.httpserver import HttpServer, Limits
from rte.runtime.httpwire import HttpRequest, Response, json_response
from rte.runtime.tls import FailureLog, ServerTls, TlsFiles
from tests.helpers.tlscerts import Pem, Pki, make_pki
from tests.helpers.waiting import wait_for

Serve = Callable[..., HttpServer]
REFUSED = (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)
"""How a refused handshake shows to a client: with TLS 1.3 the client finishes its side first and
learns of the refusal (an alert, or the closed connection) on its first read."""


BIG_ANSWER = bytes(i % 251 for i in range(3 * 1024 * 1024 + 5))


def handler(request: HttpRequest) -> Response:
    if request.path == "/big":  # sent apart from its head (not gathered: TLS has no sendmsg)
        return Response(200, BIG_ANSWER)
    return json_response(200, {"path": request.path, "length": len(request.body)})


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def serve(pki: Pki) -> Iterator[Serve]:
    servers: list[HttpServer] = []

    def start(check_interval: float = 1.0) -> HttpServer:
        tls = ServerTls(TlsFiles(pki.server.cert, pki.server.key, pki.ca.path), check_interval=check_interval)
        limits = Limits(header_timeout=2.0, max_body=8 << 20)
        server = HttpServer("127.0.0.1", 0, handler, limits=limits, tls=tls).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def client_context(pki: Pki, identity: Pem | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca.path)
    if identity is not None:
        context.load_cert_chain(identity.cert, identity.key)
    return context


def call(server: HttpServer, context: ssl.SSLContext, path: str = "/filter", body: bytes = b"{}") -> int:
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_client_with_a_certificate_of_the_client_ca_is_served(serve: Serve, pki: Pki) -> None:
    server = serve()
    assert server.url.startswith("https://")
    assert call(server, client_context(pki, pki.client)) == 200


def test_a_client_without_a_certificate_is_refused_and_logged_once(
    serve: Serve, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve()

    def logged() -> list[str]:
        return [r.getMessage() for r in caplog.records if "handshake" in r.getMessage()]

    with caplog.at_level(logging.INFO, logger="rte.runtime.tls"):
        with pytest.raises(REFUSED):
            call(server, client_context(pki, None))
        # The server's thread logs after it sent the alert the client has just read: wait for it.
        wait_for(logged, timeout=10.0, what="the server's log line about the refused handshake")
        # A connection served after it: the dispatcher is done with the refused one, so a
        # second line about it would be out by now.
        assert call(server, client_context(pki, pki.client)) == 200
    [line] = logged()
    assert "127.0.0.1" in line and "\n" not in line


def test_a_client_certificate_from_another_ca_is_refused(serve: Serve, pki: Pki) -> None:
    server = serve()
    with pytest.raises(REFUSED):
        call(server, client_context(pki, pki.stranger))
    assert call(server, client_context(pki, pki.client)) == 200  # the server is unharmed


def test_plain_http_on_the_tls_port_gets_no_answer(serve: Serve) -> None:
    server = serve()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /state HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:  # refused while our request was still unread
            pass
    assert b"HTTP/1.1" not in received


def test_the_kubernetes_clients_https_transport_with_a_client_certificate_works(
    serve: Serve, pki: Pki
) -> None:
    from kubernetes import client

    server = serve()
    config = client.Configuration()
    config.host = server.url
    config.ssl_ca_cert = str(pki.ca.path)
    config.cert_file = str(pki.client.cert)
    config.key_file = str(pki.client.key)
    api = client.ApiClient(config)
    args = {"Pod": {}, "NodeNames": ["a"]}
    response = api.rest_client.request(
        "POST", f"{server.url}/filter", headers={"Content-Type": "application/json"}, body=args
    )
    assert response.status == 200
    assert json.loads(response.read()) == {"path": "/filter", "length": len(json.dumps(args))}


def test_keep_alive_pipelining_and_large_bodies_work_over_tls(serve: Serve, pki: Pki) -> None:
    server = serve()
    context = client_context(pki, pki.client)
    big = b"x" * (3 * 1024 * 1024 + 17)  # many TLS records
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
        one = b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        two = b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(big) + big
        three = b"GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        sock.sendall(one + two + three)  # pipelined: the second head may sit in the TLS buffer
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 3
    assert b'"path":"/b","length":%d' % len(big) in received
    assert b'"path":"/c"' in received


def test_a_large_answer_arrives_whole_over_tls(serve: Serve, pki: Pki) -> None:
    server = serve()
    context = client_context(pki, pki.client)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("GET", "/big")
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, BIG_ANSWER)
    finally:
        conn.close()


def test_a_renewed_certificate_is_served_to_new_connections(serve: Serve, pki: Pki) -> None:
    server = serve(check_interval=0.0)
    context = client_context(pki, pki.client)

    def served_name() -> str:
        with (
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            cert = sock.getpeercert()
            assert cert is not None
            return dict(item[0] for item in cert["subject"])["commonName"]

    assert served_name() == "server"
    renewed = pki.ca.issue(pki.server.cert.parent / "renewed", "server-renewed", server=True)
    os.replace(renewed.key, pki.server.key)  # the key first: a mismatched pair in between
    assert served_name() == "server"  # ... keeps the previous pair
    os.replace(renewed.cert, pki.server.cert)
    assert served_name() == "server-renewed"
    assert call(server, context) == 200


def test_unusable_files_at_start_are_one_line_naming_the_file(pki: Pki, tmp_path: Path) -> None:
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"empty\.pem"):
        ServerTls(TlsFiles(pki.server.cert, pki.server.key, empty))
    with pytest.raises(ConfigError, match=r"server\.crt and .*stranger|not a usable certificate"):
        ServerTls(TlsFiles(pki.server.cert, pki.stranger.key, pki.ca.path))
    with pytest.raises(ConfigError, match=r"missing\.crt"):
        ServerTls(TlsFiles(tmp_path / "missing.crt", pki.server.key, pki.ca.path))


def test_failed_handshakes_are_logged_at_most_one_line_per_interval(
    serve: Serve, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #26, item 10: a client without a certificate reconnecting in a loop made one INFO
    line per connection. Now the first failure is logged, the next ones only counted."""
    server = serve()

    def refused() -> int:
        return server.tls_failures.total

    with caplog.at_level(logging.INFO, logger="rte.runtime.tls"):
        for k in range(1, 6):
            with pytest.raises(REFUSED):
                call(server, client_context(pki, None))
            wait_for(lambda k=k: refused() >= k, timeout=10.0, what=f"refused handshake {k}")  # type: ignore[misc]
    lines = [r.getMessage() for r in caplog.records if "handshake" in r.getMessage()]
    assert len(lines) == 1 and refused() == 5


def test_the_failure_log_says_how_many_failures_it_did_not_log(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    failures = FailureLog(interval=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="rte.runtime.tls"):
        for second in (0.0, 1.0, 2.0, 59.0, 61.0, 62.0, 200.0):
            now[0] = second
            failures.failed("10.0.0.1:4000", "PEER_DID_NOT_RETURN_A_CERTIFICATE")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and failures.total == 7
    assert lines[0].endswith("PEER_DID_NOT_RETURN_A_CERTIFICATE")
    assert "(and 3 more failed handshakes since the last line)" in lines[1]  # 1.0, 2.0, 59.0
    assert "(and 1 more failed handshakes since the last line)" in lines[2]  # 62.0


def test_tls_1_2_offers_aead_suites_only(pki: Pki) -> None:
    """Issue #26, item 10: OpenSSL's default list offered CBC suites under TLS 1.2."""
    context = ServerTls(TlsFiles(pki.server.cert, pki.server.key, pki.ca.path)).context()
    tls12 = [c for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 and all(c["aead"] for c in tls12), [c["name"] for c in tls12 if not c["aead"]]


def test_a_tls_1_2_client_offering_only_cbc_suites_is_refused(serve: Serve, pki: Pki) -> None:
    server = serve()
    cbc = client_context(pki, pki.client)
    cbc.maximum_version = ssl.TLSVersion.TLSv1_2
    cbc.set_ciphers("ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384")  # what OpenSSL offered
    with pytest.raises(REFUSED):
        call(server, cbc)
    aead = client_context(pki, pki.client)
    aead.maximum_version = ssl.TLSVersion.TLSv1_2
    assert call(server, aead) == 200  # TLS 1.2 with the default (AEAD-first) offer still works
