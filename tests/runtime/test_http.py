"""The daemons' HTTP server over real sockets: what idle, slow, oversized or vanishing clients cost.

Timeouts are set small here so that each behaviour shows within a second; the assertions only
bound them generously (a loaded machine must not fail them), never time them tightly.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rte.errors import ConfigError
from rte.runtime.httpserver import HttpServer, Limits
from rte.runtime.httpwire import HttpRequest, Response, json_response, text_response

BIG = b"x" * (32 * 1024 * 1024)


def handler(request: HttpRequest) -> Response:
    if request.path == "/echo":
        return json_response(200, {"method": request.method, "length": len(request.body)})
    if request.path == "/big":
        return Response(200, BIG, "application/octet-stream")
    if request.path == "/bug":
        raise ValueError("a bug\nwith two lines")
    return text_response(404, "no\n")


@pytest.fixture
def serve() -> Iterator[Callable[..., HttpServer]]:
    servers: list[HttpServer] = []

    def start(**limits: object) -> HttpServer:
        server = HttpServer("127.0.0.1", 0, handler, limits=Limits(**limits)).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def connect(server: HttpServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 10 s pass)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (recv returns b"") within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    return True


def get(server: HttpServer, path: str = "/echo") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_three_hundred_idle_connections_cost_no_thread_and_a_new_client_is_still_served(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve(workers=2, max_connections=256, header_timeout=60)
    threads = threading.active_count()
    idle = [connect(server) for _ in range(300)]
    try:
        time.sleep(0.3)  # let the server accept them all
        assert threading.active_count() <= threads
        # Beyond max_connections the longest-waiting connection makes room for the new one.
        assert get(server) == 200
        assert threading.active_count() <= threads
    finally:
        for sock in idle:
            sock.close()


def test_a_connection_that_sends_nothing_is_dropped_after_the_header_timeout(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve(header_timeout=0.2)
    with connect(server) as sock:
        assert closed_within(sock, 10)


def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve(idle_timeout=0.2)
    with connect(server) as sock:
        sock.sendall(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK")
        assert closed_within(sock, 10)


def test_a_slow_loris_head_is_cut_off_with_408(serve: Callable[..., HttpServer]) -> None:
    server = serve(header_timeout=0.5)
    with connect(server) as sock:
        sock.sendall(b"GET /echo HTTP/1.1\r\n")
        started = time.monotonic()
        reply = b""
        while time.monotonic() - started < 10:  # one header byte every 50 ms, never a blank line
            try:
                sock.sendall(b"X")
            except OSError:
                break
            if select.select([sock], [], [], 0.05)[0]:
                reply = answer(sock)
                break
        assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), reply
        assert time.monotonic() - started < 8


def test_a_body_over_the_limit_is_refused_from_its_content_length_before_it_is_sent(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve(max_body=1000)
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        reply = answer(sock)  # the body never comes: the answer must not wait for it
    assert reply.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n")
    assert b"Connection: close\r\n" in reply
    assert reply.endswith(b"body of 100000000 bytes exceeds the limit of 1000\n")


def test_a_chunked_body_is_counted_while_read_and_cut_at_the_limit(serve: Callable[..., HttpServer]) -> None:
    server = serve(max_body=1000)
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        sock.sendall(b"258\r\n" + b"a" * 600 + b"\r\n" + b"258\r\n")  # 600 bytes, then 600 more announced
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert reply.endswith(b"body exceeds the limit of 1000 bytes\n")
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/echo", body=iter([b"a" * 500, b"b" * 500]), encode_chunked=True)
    assert json.loads(conn.getresponse().read()) == {"method": "POST", "length": 1000}
    conn.close()


@pytest.mark.parametrize("length", ["-5", "abc", "+5", " 5_0", "1e3", "0x10", "5, 6"])
def test_a_content_length_that_is_not_plain_digits_is_a_400(
    serve: Callable[..., HttpServer], length: str
) -> None:
    server = serve()
    with connect(server) as sock:
        sock.sendall(f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode())
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert reply.count(b"\n", reply.index(b"\r\n\r\n") + 4) == 1  # a one-line reason


def test_both_framings_at_once_and_a_post_without_length_are_refused(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve()
    with connect(server) as sock:
        head = b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        sock.sendall(head + b"3\r\nabc\r\n0\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 400 ")
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 411 ")


def _records(caplog: pytest.LogCaptureFixture, text: str, timeout: float = 10) -> list[logging.LogRecord]:
    deadline = time.monotonic() + timeout
    while (
        not (found := [r for r in caplog.records if text in r.getMessage()]) and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    return found


def test_a_client_that_disconnects_mid_request_costs_one_log_line(
    serve: Callable[..., HttpServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rte.runtime.httpserver")
    server = serve()
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"a" * 10)
    [record] = _records(caplog, "client went away mid-request")
    assert record.exc_info is None and "\n" not in record.getMessage()
    assert get(server) == 200  # and the server serves on


def test_a_client_that_disconnects_mid_response_costs_one_log_line(
    serve: Callable[..., HttpServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rte.runtime.httpserver")
    server = serve()
    sock = connect(server)
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.recv(1024)  # the answer has started
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    sock.close()
    [record] = _records(caplog, "client went away mid-response")
    assert record.exc_info is None and "\n" not in record.getMessage()
    assert get(server) == 200


def test_pipelined_requests_and_expect_100_continue_are_answered_in_order(
    serve: Callable[..., HttpServer],
) -> None:
    server = serve()
    with connect(server) as sock:
        sock.sendall(
            b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"
            b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        reply = answer(sock)
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", reply) == [b"200", b"200", b"404"]
    assert b'{"method":"POST","length":2}' in reply
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"abc")
        assert b'"length":3' in sock.recv(65536)


def test_a_handler_bug_is_a_500_with_a_one_line_reason_and_the_server_serves_on(
    serve: Callable[..., HttpServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = serve()
    caplog.set_level(logging.CRITICAL, logger="rte.runtime.httpserver")  # the traceback is expected
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/bug")
    response = conn.getresponse()
    assert response.status == 500
    assert response.read() == b"internal error: ValueError: a bug with two lines\n"
    conn.close()
    assert get(server) == 200


def test_a_port_in_use_is_a_config_error_naming_the_setting(serve: Callable[..., HttpServer]) -> None:
    server = serve()
    with pytest.raises(ConfigError, match=rf"^--listen: cannot listen on 127.0.0.1:{server.port}: [^(]+$"):
        HttpServer("127.0.0.1", server.port, handler)
