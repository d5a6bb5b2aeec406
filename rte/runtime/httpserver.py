"""The daemons' small HTTP/1.1 server: probes, metrics and JSON verbs, hardened for long uptimes.

Built on the standard library (sockets, ``selectors``, ``http.client``'s header parser) instead
of ``http.server``'s thread per connection, which lets any client that connects and sends
nothing hold a thread forever. Here:

* one **dispatcher** thread owns the listening socket and every connection that is waiting for
  a request: new, kept alive between requests, or with a request head still arriving. It reads
  without blocking and buffers the head until it is complete, so a waiting connection costs a
  buffer and never a thread;
* a fixed pool of **workers** takes complete heads: reads the body within the limits, calls the
  handler, writes the answer, and gives a kept-alive connection back to the dispatcher, unless
  its next request comes within ``next_request_wait`` (5 ms) while no other request waits.

The limits (:class:`Limits`) follow Go's ``net/http.Server`` (``ReadHeaderTimeout``,
``ReadTimeout``, ``WriteTimeout``, ``IdleTimeout``; golang/go ``src/net/http/server.go``): a head
that has not arrived within ``header_timeout`` (a half-open connection, a slow-loris dribble) is
cut with 408; a request must be read within ``read_timeout`` of its first byte; an answer
written within ``write_timeout``; an idle kept-alive connection is closed after
``idle_timeout``. At ``max_connections`` the connection that has waited longest is dropped for
the new one. A body larger than ``max_body`` is refused with 413 before it is read
(:mod:`rte.runtime.httpwire` has the message rules). A client that goes away mid-request or
mid-response costs one log line, never a traceback.

With ``tls`` (:mod:`rte.runtime.tls`) every connection is TLS with a required client certificate;
the dispatcher runs the handshake without blocking, within ``header_timeout``. Decrypted bytes a
selector cannot see are drained after each read and when a worker gives a connection back.
A response marked ``close`` ends its connection (a client then connects afresh).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import selectors
import socket
import ssl
import threading
import time
from functools import partial
from http import HTTPStatus

from rte.errors import ConfigError
from rte.runtime import tls as tlsio
from rte.runtime.httpwire import (
    BodyReader,
    ClientGone,
    ErrorFormat,
    Handler,
    HttpError,
    HttpRequest,
    Response,
    encode_response,
    head_end,
    keeps_alive,
    parse_head,
    plain_error,
    read_body,
    send_continue,
    send_response,
    wait_for_head,
)
from rte.runtime.httpwire import Limits as Limits  # re-exported: where servers are configured

log = logging.getLogger(__name__)

_LINGER = 2.0
"""Seconds a connection closed after an error keeps being read (and discarded), so that a client
still sending its body reads our answer instead of a reset."""


class _Conn:
    __slots__ = ("buf", "deadline", "draining", "handshaking", "peer", "since", "sock", "started")

    def __init__(self, sock: socket.socket, peer: str, now: float, deadline: float) -> None:
        self.sock = sock
        self.handshaking = isinstance(sock, ssl.SSLSocket)
        self.peer = peer
        self.buf = bytearray()
        self.since = now
        self.deadline = deadline
        self.started: float | None = None
        self.draining = False


class HttpServer:
    """Serves ``handler`` on ``host:port`` until :meth:`stop`; ``port=0`` picks a free port.

    ``setting`` names the listen address in the error raised when the port cannot be bound;
    ``tls`` makes it an HTTPS server requiring client certificates (see the module docstring).
    """

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        limits: Limits | None = None,
        errors: ErrorFormat = plain_error,
        server_name: str = "rte",
        setting: str = "--listen",
        thread_name: str = "rte-http",
        tls: tlsio.ServerTls | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.tls = tls
        self.tls_failures = tlsio.FailureLog()
        """Failed handshakes: counted, logged at most one line a minute."""
        self._handler = handler
        self._errors = errors
        self._server_name = server_name
        self._thread_name = thread_name
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._listener = socket.create_server((host, port), family=family, backlog=128)
        except OSError as e:
            reason = os.strerror(e.errno) if e.errno else str(e)  # create_server adds the address again
            raise ConfigError(setting, f"cannot listen on {host}:{port}: {reason}") from e
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._ready: queue.SimpleQueue[_Conn | None] = queue.SimpleQueue()
        self._returned: queue.SimpleQueue[_Conn] = queue.SimpleQueue()
        self._waiting: dict[int, _Conn] = {}
        self._open = 0
        self._lock = threading.Lock()
        self._stopping = False
        self._threads: list[threading.Thread] = []

    @property
    def host(self) -> str:
        return str(self._listener.getsockname()[0])

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://[{host}]:{self.port}" if ":" in host else f"{scheme}://{host}:{self.port}"

    def start(self) -> HttpServer:
        if self._threads:
            return self
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._threads.append(threading.Thread(target=self._dispatch, name=self._thread_name, daemon=True))
        for i in range(max(1, self.limits.workers)):
            self._threads.append(
                threading.Thread(target=self._work, name=f"{self._thread_name}-{i}", daemon=True)
            )
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close waiting connections, let requests in progress finish (``timeout``)."""
        self._stopping = True
        self._wake()
        for _ in range(max(1, self.limits.workers)):
            self._ready.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        while True:
            try:
                self._close(self._returned.get_nowait())
            except queue.Empty:
                break
        for conn in list(self._waiting.values()):
            self._drop(conn)
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # --- the dispatcher ----------------------------------------------------------------

    def _wake(self) -> None:
        # OSError: the pipe is full (a wake-up is pending anyway) or closed (stopping).
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _dispatch(self) -> None:
        while not self._stopping:
            timeout = 1.0
            if self._waiting:
                soonest = min(c.deadline for c in self._waiting.values())
                timeout = min(timeout, max(0.0, soonest - time.monotonic()))
            try:
                for key, _ in self._selector.select(timeout):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._adopt_returned()
                    else:
                        self._readable(key.data)
                self._expire(time.monotonic())
            except Exception:  # a bug here must not stop the server; the loop goes on
                log.exception("http: dispatcher error")
                time.sleep(0.1)

    def _accept(self) -> None:
        while True:
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of file descriptors, say: keep serving the others
                log.warning("http: accept failed: %s", e)
                return
            now = time.monotonic()
            if self._open >= self.limits.max_connections:
                if not self._waiting:
                    sock.close()
                    continue
                oldest = min(self._waiting.values(), key=lambda c: c.since)
                log.debug(
                    "http: %d connections open: dropping the one idle since longest (%s)",
                    self._open,
                    oldest.peer,
                )
                self._drop(oldest)
            sock.setblocking(False)
            with contextlib.suppress(OSError):  # small answers: no Nagle delay
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                try:
                    sock = self.tls.context().wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                except (OSError, ValueError) as e:
                    log.warning("http: cannot start TLS with %s: %s", address, e)
                    sock.close()
                    continue
            with self._lock:
                self._open += 1
            peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
            self._wait(_Conn(sock, peer, now, now + self.limits.header_timeout))

    def _wait(self, conn: _Conn) -> None:
        self._waiting[conn.sock.fileno()] = conn
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _unwait(self, conn: _Conn) -> None:
        self._waiting.pop(conn.sock.fileno(), None)
        self._selector.unregister(conn.sock)

    def _adopt_returned(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while True:
            try:
                conn = self._returned.get_nowait()
            except queue.Empty:
                return
            if not conn.draining and head_end(conn.buf) >= 0:  # a pipelined request, complete already
                conn.started = time.monotonic()
                self._ready.put(conn)
            else:
                self._wait(conn)
                if tlsio.pending(conn.sock):
                    self._readable(conn)

    def _readable(self, conn: _Conn) -> None:
        if conn.handshaking:
            done = tlsio.handshake(conn.sock, self.tls_failures)  # type: ignore[arg-type]
            if done is None:
                self._drop(conn)
            if not done:
                return
            conn.handshaking = False
        try:
            data = conn.sock.recv(64 * 1024)
            while data and tlsio.pending(conn.sock):
                data += conn.sock.recv(64 * 1024)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError:
            data = b""
        if not data or conn.draining:
            if not data:
                self._drop(conn)
            return
        now = time.monotonic()
        if conn.started is None:
            conn.started = now
            conn.deadline = now + self.limits.header_timeout
        conn.buf += data
        if head_end(conn.buf) >= 0:
            self._unwait(conn)
            self._ready.put(conn)
        elif len(conn.buf) > self.limits.max_head:
            self._refuse(conn, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._waiting.values() if c.deadline <= now]:
            if conn.buf.strip() and not conn.draining:
                log.debug("http: %s sent an incomplete request head for too long", conn.peer)
                self._refuse(conn, HTTPStatus.REQUEST_TIMEOUT, "request head not received in time")
            else:
                self._drop(conn)  # idle, half-open, or done lingering

    def _refuse(self, conn: _Conn, status: int, message: str) -> None:
        """Answer a waiting connection with an error, without blocking, then linger and close it."""
        try:
            conn.sock.send(self._encode(self._errors(status, message), keep_alive=False, head_only=False)[0])
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._drop(conn)
            return
        conn.buf.clear()
        conn.draining = True
        conn.deadline = time.monotonic() + _LINGER

    def _drop(self, conn: _Conn) -> None:
        if conn.sock.fileno() in self._waiting:
            self._unwait(conn)
        self._close(conn)

    def _close(self, conn: _Conn) -> None:
        if conn.sock.fileno() < 0:
            return
        conn.sock.close()
        with self._lock:
            self._open -= 1

    # --- the workers ---------------------------------------------------------------------

    def _work(self) -> None:
        while (conn := self._ready.get()) is not None:
            while (keep := self._serve_safely(conn)) and self._next_request(conn):
                pass  # the connection's next request came soon: served by this worker
            if keep is None:
                self._close(conn)
            else:
                self._give_back(conn, linger=not keep)

    def _serve_safely(self, conn: _Conn) -> bool | None:
        try:
            return self._serve(conn)
        except Exception:  # a bug here must not cost the worker
            log.exception("http: unexpected error serving %s", conn.peer)
            return False

    def _next_request(self, conn: _Conn) -> bool:
        """Whether the connection's next request head arrived within ``next_request_wait``.

        Serving it here spares the hand-over to the dispatcher and back (a third of the
        server's time per request on loopback); bytes short of a head stay for the dispatcher.
        """
        conn.started = None
        if head_end(conn.buf) < 0:  # else pipelined, there already
            wait = self.limits.next_request_wait
            if wait <= 0 or self._stopping or not self._ready.empty():
                return False
            if not wait_for_head(conn.sock, conn.buf, time.monotonic() + wait, self.limits.max_head):
                return False
        conn.started = time.monotonic()
        return True

    def _give_back(self, conn: _Conn, *, linger: bool) -> None:
        if self._stopping:
            self._close(conn)
            return
        now = time.monotonic()
        if linger:
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                self._close(conn)
                return
        conn.draining = linger
        conn.sock.setblocking(False)
        conn.since, conn.started = now, None
        conn.deadline = now + (_LINGER if linger else self.limits.idle_timeout)
        if conn.buf and not linger:  # the start of a pipelined request: its head is on the clock
            conn.started, conn.deadline = now, now + self.limits.header_timeout
        self._returned.put(conn)
        self._wake()

    def _serve(self, conn: _Conn) -> bool | None:
        """One request: True to keep the connection, False to linger and close, None to close now."""
        end = head_end(conn.buf)
        head, rest = bytes(conn.buf[:end]), bytes(conn.buf[end:])
        started = conn.started if conn.started is not None else time.monotonic()
        reader = BodyReader(conn.sock, rest, started + self.limits.read_timeout)
        method, target, version = "-", "-", "HTTP/1.1"
        try:
            method, target, version, headers = parse_head(head)
            keep_alive = keeps_alive(version, headers)
            go_on = partial(send_continue, conn.sock, version, headers, self.limits.write_timeout)
            body = read_body(method, headers, reader, self.limits.max_body, go_on)
            path, _, query = target.partition("?")
            response = self._call(HttpRequest(method, path, query, headers, body, conn.peer))
            keep_alive = keep_alive and not response.close
        except HttpError as e:
            response, keep_alive = self._errors(e.status, str(e)), False
        except ClientGone as e:
            log.warning(
                "http: %s %s from %s: client went away mid-request (%s)", method, target[:200], conn.peer, e
            )
            return None
        conn.buf = bytearray(reader.leftover())
        data, body = self._encode(
            response, keep_alive=keep_alive, head_only=method == "HEAD", version=version
        )
        conn.sock.settimeout(self.limits.write_timeout)
        try:
            send_response(conn.sock, data, body)
        except OSError as e:
            reason = "no progress in time" if isinstance(e, TimeoutError) else type(e).__name__
            log.warning(
                "http: %s %s from %s: client went away mid-response (%s)",
                method,
                target[:200],
                conn.peer,
                reason,
            )
            return None
        return keep_alive

    def _call(self, request: HttpRequest) -> Response:
        try:
            return self._handler(request)
        except Exception as e:  # a bug: answer, log, keep serving
            log.exception("http: %s %s failed", request.method, request.path)
            reason = " ".join(str(e).split())  # one line, whatever the exception says
            return self._errors(
                HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(e).__name__}: {reason}"
            )

    def _encode(
        self, response: Response, *, keep_alive: bool, head_only: bool, version: str = "HTTP/1.1"
    ) -> tuple[bytes, bytes]:
        return encode_response(
            response, server=self._server_name, keep_alive=keep_alive, head_only=head_only, version=version
        )
