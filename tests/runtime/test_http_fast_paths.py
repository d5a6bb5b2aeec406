"""The HTTP server's shortcuts answer as the plain paths do.

* A worker that answered waits briefly for the connection's next request and serves it itself
  (``Limits.next_request_wait``); whatever does not complete a head in that time goes back to
  the dispatcher, which must finish it as if the worker had never looked.
* Header blocks of plain fields are read without the email parser: the same fields as
  ``http.client.parse_headers`` reads, and everything else is left to it.
* The head's end is found as before when the buffer also holds the body.
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rte.runtime.httpserver import HttpServer, Limits
from rte.runtime.httpwire import HttpRequest, Response, _plain_fields, head_end, json_response

ECHO = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"


def handler(request: HttpRequest) -> Response:
    return json_response(200, {"path": request.path, "length": len(request.body)})


@pytest.fixture(params=[0.0, 0.5], ids=["no-wait", "wait"])
def server(request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    server = HttpServer("127.0.0.1", 0, handler, limits=Limits(next_request_wait=request.param)).start()
    yield server
    server.stop()


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    out, data = [], b""
    sock.settimeout(10)
    while len(out) < count:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {len(out)} answers"
        data += chunk
        while (end := data.find(b"}")) >= 0:
            out.append(data[: end + 1])
            data = data[end + 1 :]
    return out


def test_requests_in_a_row_on_one_connection_are_all_answered(server: HttpServer) -> None:
    given_back = []
    give_back = server._give_back
    server._give_back = lambda conn, *, linger: given_back.append(1) or give_back(conn, linger=linger)  # type: ignore[method-assign]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for _ in range(20):
            sock.sendall(ECHO)
            (reply,) = _answers(sock, 1)
            assert reply.startswith(b"HTTP/1.1 200 OK") and reply.endswith(b'"length":4}')
        if server.limits.next_request_wait:  # the worker took each next request itself
            assert len(given_back) <= 3
        else:  # each went back to the dispatcher (the last one just after its answer was sent)
            deadline = time.monotonic() + 5
            while len(given_back) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(given_back) == 20
        sock.sendall(ECHO + ECHO)  # pipelined
        assert len(_answers(sock, 2)) == 2


def test_a_head_split_across_the_wait_is_finished_by_the_dispatcher(server: HttpServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(ECHO)
        _answers(sock, 1)
        sock.sendall(ECHO[:20])  # within the worker's wait
        time.sleep(0.4)  # past it: the connection is back with the dispatcher, half a head read
        sock.sendall(ECHO[20:])
        (reply,) = _answers(sock, 1)
        assert reply.endswith(b'"length":4}')


def test_a_client_that_closes_during_the_wait_costs_its_connection_only(server: HttpServer) -> None:
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(ECHO)
            _answers(sock, 1)
    deadline = time.monotonic() + 5
    while server._open and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server._open == 0
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/echo", body=b"12")
    assert conn.getresponse().read() == b'{"path":"/echo","length":2}'
    conn.close()


_PIECES = ["A", "b", "-", ":", " ", "\t", "\r", "\n", "\r\n", "é", "From "]
_LINE = st.lists(st.sampled_from(_PIECES), max_size=12)


@given(st.lists(_LINE.map("".join), max_size=6), st.sampled_from(["\r\n", "\n"]))
def test_plain_header_fields_are_read_as_parse_headers_reads_them(lines: list[str], end: str) -> None:
    block = "".join(line + end for line in lines) + end
    rest = block.encode("latin-1")
    if (cut := head_end(bytearray(b"GET / HTTP/1.1\r\n" + rest))) < 0:
        return
    rest = (b"GET / HTTP/1.1\r\n" + rest)[:cut].partition(b"\n")[2]
    fast = _plain_fields(rest)
    if fast is not None:
        plain = http.client.parse_headers(io.BytesIO(rest))
        assert fast.items() == plain.items() and type(fast) is type(plain)


def test_the_usual_head_takes_the_plain_reading_and_unusual_ones_do_not() -> None:
    usual = b"Host: x\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\n"
    fields = _plain_fields(usual)
    assert fields is not None and fields.get_all("Content-Length") == ["5"]
    assert _plain_fields(b"A: b\r\n folded\r\n\r\n") is None  # continuation line
    assert _plain_fields(b"A b: c\r\n\r\n") is None  # not a field name
    assert _plain_fields(b"A: b\rc\r\n\r\n") is None  # the email parser splits at a lone CR
    assert _plain_fields(b"A: b\r\n" * 100 + b"\r\n") is None  # parse_headers refuses 101 lines
    assert _plain_fields(b"A: b\r\n" * 99 + b"\r\n") is not None


@given(st.binary(max_size=40), st.binary(max_size=40))
def test_the_head_ends_at_the_first_blank_line_with_a_body_behind_it(head: bytes, body: bytes) -> None:
    buf = bytearray(head + b"\r\n\r\n" + body)
    at, size = min((buf.find(sep), len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if buf.find(sep) >= 0)
    assert head_end(buf) == at + size
