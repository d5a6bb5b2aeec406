"""HTTP/1.1 messages for :mod:`rte.runtime.httpserver`: requests in, responses out, by the rules.

No sockets are opened here; the body reader reads from the connection it is given, by a deadline.
Parsing follows RFC 9112 where a mistake would matter: ``Content-Length`` must be plain digits
(``int()`` would also take ``+5``, `` 5`` or ``5_0``), a request with both ``Transfer-Encoding``
and ``Content-Length`` is refused (a proxy in front could frame it differently), a body over the
limit is refused from its declared length before a byte of it is read, and a chunked body is
counted while it is read and cut at the limit.
"""

from __future__ import annotations

import email.utils
import http.client
import io
import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from typing import Any

from rte.yamlfile import encode_json

MiB = 1024 * 1024
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_PIECE = 1 * MiB
"""Bytes received into one buffer at a time while reading a long body."""
_INLINE_BODY = 64 * 1024
"""Bodies up to this size are sent in one piece with the head (one packet with TCP_NODELAY)."""


@dataclass(frozen=True)
class Limits:
    """What one connection and one request may cost; the defaults suit probes and small JSON."""

    max_body: int = 1 * MiB
    max_head: int = 64 * 1024
    header_timeout: float = 10.0
    read_timeout: float = 30.0
    write_timeout: float = 30.0
    idle_timeout: float = 120.0
    workers: int = 4
    max_connections: int = 256
    next_request_wait: float = 0.005
    """Seconds a worker that answered waits for the connection's next request (kube-scheduler
    sends prioritize right after filter's answer) before giving it back to the dispatcher; only
    while no other request waits for a worker. 0: never."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: str
    headers: Message
    body: bytes
    peer: str


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = TEXT
    close: bool = False
    """End the connection after this answer (a load balancer then picks a backend afresh)."""
    headers: tuple[tuple[str, str], ...] = ()
    """More header fields, as (name, value): text of our own, one line each."""


def server_timing(seconds: float, cpu_seconds: float | None = None) -> tuple[str, str]:
    """A ``Server-Timing`` field (W3C Server Timing, https://www.w3.org/TR/server-timing/), which
    lets a client tell the server's share of a round trip from the wire's: ``app;dur=<ms>``, the
    time taken, and ``cpu;dur=<ms>``, the serving thread's CPU time within it (what other
    processes competing for the CPU do not inflate)."""
    value = f"app;dur={seconds * 1000:.3f}"
    if cpu_seconds is not None:
        value += f", cpu;dur={cpu_seconds * 1000:.3f}"
    return "Server-Timing", value


def json_response(status: int, obj: Any) -> Response:
    return Response(status, encode_json(obj), JSON)


def text_response(status: int, text: str, content_type: str = TEXT) -> Response:
    return Response(status, text.encode("utf-8"), content_type)


def plain_error(status: int, message: str) -> Response:
    return text_response(status, message + "\n")


Handler = Callable[[HttpRequest], Response]
ErrorFormat = Callable[[int, str], Response]
"""How a server words the errors it answers itself (400, 408, 411, 413, 431, 500, ...)."""


class HttpError(Exception):
    """A request this server answers itself, with ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ClientGone(Exception):
    """The peer closed or reset the connection, or stopped sending for ``read_timeout``."""


def head_end(buf: bytearray) -> int:
    """The index just past the blank line that ends a request head, or -1.

    The buffer may hold a body after the head (up to 64 KiB): ``\n\n`` is looked for only
    before the first ``\r\n\r\n``, not through the whole body.
    """
    crlf = buf.find(b"\r\n\r\n")
    lf = buf.find(b"\n\n", 0, len(buf) if crlf < 0 else crlf + 1)
    if lf >= 0:
        return lf + 2
    return -1 if crlf < 0 else crlf + 4


class BodyReader:
    """Reads what follows a request head: buffered bytes first, then the socket, by a deadline."""

    def __init__(self, sock: socket.socket, initial: bytes, deadline: float) -> None:
        self._sock = sock
        self._buf = bytearray(initial)
        self._deadline = deadline

    def _recv_into(self, into: memoryview, wanted: str) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise ClientGone(f"{wanted} not received in time")
        self._sock.settimeout(left)
        try:
            got = self._sock.recv_into(into)
        except TimeoutError:
            raise ClientGone(f"{wanted} not received in time") from None
        except OSError as e:
            raise ClientGone(f"{type(e).__name__} while reading {wanted}") from e
        if not got:
            raise ClientGone(f"connection closed before {wanted} was complete")
        return got

    def _fill(self, wanted: str) -> None:
        chunk = bytearray(64 * 1024)
        got = self._recv_into(memoryview(chunk), wanted)
        self._buf += memoryview(chunk)[:got]

    def read(self, n: int) -> bytes:
        """``n`` bytes. What the buffer lacks is received straight into pieces of up to
        :data:`_PIECE` bytes, joined once: a body of megabytes is not gathered into a growing
        buffer (each growth a copy) and sliced (two more), and memory still grows only as the
        body arrives, never to a declared length the client does not send."""
        have = len(self._buf)
        if have >= n:
            with memoryview(self._buf) as view:
                out = bytes(view[:n])
            del self._buf[:n]
            return out
        parts = [self._buf]
        self._buf = bytearray()
        while have < n:
            piece = bytearray(min(n - have, _PIECE))
            with memoryview(piece) as view:
                filled = 0
                while filled < len(piece):
                    filled += self._recv_into(view[filled:], f"a body of {n} bytes (got {have + filled})")
            parts.append(piece)
            have += len(piece)
        return b"".join(parts)

    def readline(self, limit: int) -> bytes:
        while (i := self._buf.find(b"\n")) < 0:
            if len(self._buf) > limit:
                raise HttpError(HTTPStatus.BAD_REQUEST, "malformed chunked body: line too long")
            self._fill("a chunk")
        out = bytes(self._buf[: i + 1])
        del self._buf[: i + 1]
        return out

    def leftover(self) -> bytes:
        return bytes(self._buf)


def wait_for_head(sock: socket.socket, buf: bytearray, deadline: float, max_head: int) -> bool:
    """Read into ``buf`` until it holds a whole request head (True), or until ``deadline``, the
    peer's close or error, or ``max_head`` bytes (False: what came stays in ``buf``)."""
    while len(buf) <= max_head:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            data = sock.recv(64 * 1024)
        except OSError:  # timed out (TLS's errors included) or gone: the dispatcher sees which
            return False
        if not data:
            return False
        buf += data
        if head_end(buf) >= 0:
            return True
    return False


def parse_head(head: bytes) -> tuple[str, str, str, Message]:
    line, _, rest = head.lstrip(b"\r\n").partition(b"\n")
    parts = line.rstrip(b"\r").decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[0].isalpha():
        raise HttpError(HTTPStatus.BAD_REQUEST, f"bad request line {line[:80]!r}")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise HttpError(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"{version[:20]!r} is not HTTP/1.0 or 1.1")
    headers = _plain_fields(rest)
    if headers is None:
        try:
            headers = http.client.parse_headers(io.BytesIO(rest))
        except http.client.HTTPException as e:
            raise HttpError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, f"bad header block: {e}") from e
    return method, target, version, headers


_PLAIN_FIELD = re.compile(rb"[\x21-\x39\x3b-\x7e]+:[^\r\n]*\r?")
"""A header line ``http.client.parse_headers`` reads as one field: a name of printable ASCII
without a colon, then the value up to the line's end (no continuation, no stray CR)."""
_MAX_FIELDS = 99
"""``parse_headers`` refuses a block of more than 100 lines, the blank one included."""
_MAX_PLAIN = 65536
"""Longer blocks are left to ``parse_headers``, which refuses a line longer than that."""


def _plain_fields(rest: bytes) -> Message | None:
    """The header block as ``http.client.parse_headers`` would read it, when every line is a
    plain field (what clients send), at a fraction of the email parser's cost; None otherwise,
    for ``parse_headers`` to decide. Its reading, per field: the name up to the first colon, the
    value with leading blanks and the line end stripped (``email.policy.compat32``)."""
    if len(rest) > _MAX_PLAIN:
        return None
    lines = rest.split(b"\n")
    fields = lines[:-2]
    if lines[-1] or lines[-2] not in (b"", b"\r") or len(fields) > _MAX_FIELDS:
        return None
    headers = http.client.HTTPMessage()
    for field in fields:
        if not _PLAIN_FIELD.fullmatch(field):
            return None
        name, _, value = field.decode("latin-1").partition(":")
        headers[name] = value.lstrip(" \t").rstrip("\r\n")
    return headers


def keeps_alive(version: str, headers: Message) -> bool:
    tokens = {t.strip().lower() for v in headers.get_all("Connection", []) for t in str(v).split(",")}
    return "close" not in tokens if version == "HTTP/1.1" else "keep-alive" in tokens


def read_body(
    method: str, headers: Message, reader: BodyReader, limit: int, on_continue: Callable[[], None]
) -> bytes:
    """The request's body, at most ``limit`` bytes; ``on_continue`` is called before reading one."""
    framing = headers.get_all("Transfer-Encoding", [])
    lengths = {str(v).strip() for v in headers.get_all("Content-Length", [])}
    if framing:
        if lengths:
            raise HttpError(HTTPStatus.BAD_REQUEST, "both Transfer-Encoding and Content-Length are set")
        coding = ",".join(str(v) for v in framing).strip().lower()
        if coding != "chunked":
            raise HttpError(HTTPStatus.NOT_IMPLEMENTED, f"unsupported Transfer-Encoding {coding!r}")
        on_continue()
        return _chunked(reader, limit)
    if lengths:
        text = lengths.pop() if len(lengths) == 1 else ",".join(sorted(lengths))
        if not _DIGITS.fullmatch(text):
            raise HttpError(HTTPStatus.BAD_REQUEST, f"bad Content-Length {text[:40]!r}")
        size = int(text)
        if size > limit:
            raise HttpError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body of {size} bytes exceeds the limit of {limit}"
            )
        if size:
            on_continue()
        return reader.read(size)
    if method in ("POST", "PUT", "PATCH"):
        raise HttpError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
    return b""


def expects_continue(version: str, headers: Message) -> bool:
    # curl sends "Expect: 100-continue" before bodies over 1 MiB and waits a second for the answer.
    return version == "HTTP/1.1" and str(headers.get("Expect", "")).lower() == "100-continue"


def send_continue(sock: socket.socket, version: str, headers: Message, timeout: float) -> None:
    """Answer ``Expect: 100-continue`` before a body is read (nothing when not asked)."""
    if expects_continue(version, headers):
        sock.settimeout(timeout)
        try:
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        except OSError as e:
            raise ClientGone(f"{type(e).__name__} while sending 100 Continue") from e


def send_response(sock: socket.socket, head: bytes, body: bytes) -> None:
    """``head``, then ``body`` (what :func:`encode_response` gives), gathered by ``sendmsg``: one
    system call for both, without joining them into a copy of the body, and no segment for the
    head alone (with ``TCP_NODELAY`` it went out by itself, waking the client once more). TLS
    sockets, which have no ``sendmsg``, send one after the other."""
    if not body or isinstance(sock, ssl.SSLSocket):
        sock.sendall(head)
        if body:
            sock.sendall(body)
        return
    views = [memoryview(head), memoryview(body)]
    while views:
        sent = sock.sendmsg(views)  # as much as the socket took before the timeout
        while views and sent >= len(views[0]):
            sent -= len(views.pop(0))
        if views:
            views[0] = views[0][sent:]


def _chunked(reader: BodyReader, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_text = reader.readline(1024).split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size_text):
            raise HttpError(HTTPStatus.BAD_REQUEST, "malformed chunked body: bad chunk size")
        size = int(size_text, 16)
        if size == 0:
            for _ in range(100):  # trailers, ignored, up to the blank line
                if not reader.readline(8192).strip():
                    return b"".join(parts)
            raise HttpError(HTTPStatus.BAD_REQUEST, "malformed chunked body: too many trailers")
        total += size
        if total > limit:
            raise HttpError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body exceeds the limit of {limit} bytes")
        parts.append(reader.read(size))
        if reader.readline(2).strip():
            raise HttpError(HTTPStatus.BAD_REQUEST, "malformed chunked body: chunk longer than its size")


def _phrase(status: int) -> str:
    phrase = _PHRASES.get(status)
    if phrase is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        _PHRASES[status] = phrase
    return phrase


_PHRASES: dict[int, str] = {}
_DATE: list[tuple[int, str]] = [(-1, "")]


def _date() -> str:
    """The ``Date`` header's value, formatted once per second (it has a second's resolution)."""
    now = time.time()
    second, text = _DATE[0]
    if int(now) != second:
        text = email.utils.formatdate(now, usegmt=True)
        _DATE[0] = (int(now), text)
    return text


def encode_response(
    response: Response, *, server: str, keep_alive: bool, head_only: bool = False, version: str = "HTTP/1.1"
) -> tuple[bytes, bytes]:
    """The status line and headers (with the body when small), and the rest of the body."""
    lines = [
        f"HTTP/1.1 {response.status} {_phrase(response.status)}",
        f"Server: {server}",
        f"Date: {_date()}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    if not keep_alive:
        lines.append("Connection: close")
    elif version == "HTTP/1.0":
        lines.append("Connection: keep-alive")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    body = b"" if head_only else response.body
    if len(body) <= _INLINE_BODY:
        return head + body, b""
    return head, body
