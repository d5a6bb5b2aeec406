"""The wire: HTTP/1.1 parsing, routing, auth, fault injection, JSON answers and watch streams."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Empty
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from . import discovery, status
from .faults import Fault, Faults, RequestRecord
from .impersonation import authorize_impersonation
from .request import Request, Response, WatchPlan, media_type
from .resources import ResourceDef
from .rest import Rest
from .status import ApiError
from .storage import Watcher


class FakeApiServer(Protocol):
    """What the HTTP front needs of :class:`~.server.FakeApiServer`, which starts it: a
    protocol, so that the server imports this module and not the other way round."""

    token: str | None
    bookmark_interval: float | None
    node_impersonation: bool
    rest: Rest
    faults: Faults

    def served_resources(self) -> list[ResourceDef]: ...

    def resource_for(self, group: str, version: str, plural: str) -> ResourceDef | None: ...

    def fault_error(self, fault: Fault, rec: RequestRecord) -> ApiError: ...

    def _record(self, rec: RequestRecord) -> None: ...

    def _track(self, conn: socket.socket) -> None: ...

    def _untrack(self, conn: socket.socket) -> None: ...

    def _watch_opened(self, watcher: Watcher) -> None: ...

    def _watch_closed(self, watcher: Watcher) -> None: ...


_CONNECTION_ERRORS = (ConnectionError, BrokenPipeError, TimeoutError, OSError)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


class ApiHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: FakeApiServer) -> None:
        self.app = app
        super().__init__(address, ApiHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Cut connections are the point of several faults; only real bugs deserve a traceback.
        if not isinstance(sys.exc_info()[1], _CONNECTION_ERRORS):
            super().handle_error(request, client_address)


@dataclass
class Route:
    resource: ResourceDef | None = None
    version: str = ""
    namespace: str | None = None
    name: str | None = None
    document: Any = None  # a discovery or health answer


def route(app: FakeApiServer, path: str) -> Route:
    parts = [p for p in path.split("/") if p]
    doc = discovery.document(app.served_resources, parts)
    if doc is not None:
        return Route(document=doc)
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise status.no_such_path()
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not 1 <= len(rest) <= 2:
        raise status.no_such_path()
    res = app.resource_for(group, version, rest[0])
    if res is None or (namespace is not None and not res.namespaced):
        raise status.no_such_path()
    name = rest[1] if len(rest) == 2 else None
    if res.namespaced and namespace is None and name is not None:
        raise status.no_such_path()
    return Route(res, version, namespace, name)


def verb_of(method: str, r: Route, query: dict[str, str]) -> str:
    if method == "GET":
        if r.name:
            return "get"
        return "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if r.name else "deletecollection",
    }.get(method, method.lower())


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle plus the client's
        # delayed ACK adds ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.app._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except _CONNECTION_ERRORS:
            pass
        finally:
            self.server.app._untrack(self.connection)

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    # -- one request ---------------------------------------------------------------------------

    def _handle(self) -> None:
        app = self.server.app
        self._started = time.monotonic()
        self._recorded = False
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        rec = self._rec = RequestRecord(
            method=self.command,
            path=url.path,
            query=query,
            verb="",
            resource="",
            namespace=None,
            name=None,
            content_type=media_type(self.headers.get("Content-Type", "")),
            user_agent=self.headers.get("User-Agent", ""),
        )
        try:
            r: Route | None = None
            failure: ApiError | None = None
            try:
                r = route(app, url.path)
            except ApiError as e:
                rec.verb, failure = self.command.lower(), e
            else:
                rec.verb = verb_of(self.command, r, query)
                rec.resource = r.resource.plural if r.resource else ""
                rec.namespace, rec.name = r.namespace, r.name
            delay = app.faults.delay_for(rec)
            if delay:
                time.sleep(delay)
            if app.token and self.headers.get("Authorization") != f"Bearer {app.token}":
                raise ApiError(401, "Unauthorized")
            authorize_impersonation(
                self.headers.get("Impersonate-User"),
                self.headers.get_all("Impersonate-Group") or [],
                enabled=app.node_impersonation,
                verb=rec.verb,
                resource=rec.resource,
                query=rec.query,
            )
            fault = app.faults.take(rec)
            if fault is not None:
                rec.injected = True
                if fault.action == "reset":
                    self._cut()
                    return
                raise app.fault_error(fault, rec)
            if failure is not None:
                raise failure
            assert r is not None
            if r.document is not None:
                self._send(200, r.document)
                rec.code = 200
                return
            self._serve(app, r, rec, body)
        except ApiError as e:
            rec.code = e.code
            self._send(e.code, e.status(), headers=e.headers)
        except _CONNECTION_ERRORS:
            self.close_connection = True
        except Exception as e:  # a bug in the double: say so loudly, but answer like an apiserver
            traceback.print_exc()
            rec.code = 500
            self._send(500, status.failure_status(500, f"fake apiserver bug: {e!r}"))
        finally:
            self._log_request()

    def _serve(self, app: FakeApiServer, r: Route, rec: RequestRecord, body: bytes) -> None:
        res = r.resource
        assert res is not None
        if res.read_only and rec.verb not in ("get", "list", "watch"):
            raise ApiError(405, f"{rec.verb} is not supported on {res.plural} by this server", details={})
        req = Request(
            method=self.command,
            resource=res,
            version=r.version,
            namespace=r.namespace,
            name=r.name,
            query=rec.query,
            content_type=rec.content_type,
            body=body,
            user_agent=rec.user_agent,
        )
        handlers = {
            "get": app.rest.get,
            "list": app.rest.list_items,
            "create": app.rest.create,
            "update": app.rest.update,
            "patch": app.rest.patch,
            "delete": app.rest.delete,
        }
        if rec.verb == "watch":
            rec.code = 200
            self._watch(app, res, app.rest.watch(req))
            return
        if rec.verb not in handlers or (res.namespaced and r.namespace is None and rec.verb != "list"):
            raise ApiError(405, "the server does not allow this method on the requested resource", details={})
        answer: Response = handlers[rec.verb](req)
        rec.code, rec.changed = answer.code, answer.changed
        headers = {}
        if answer.warnings:
            # RFC 7234 warn-text: a quoted string, inner quotes escaped, like the apiserver's.
            headers["Warning"] = [f'299 - "{_escape(w)}"' for w in answer.warnings]
        self._send(answer.code, answer.body, headers=headers)

    # -- answers -------------------------------------------------------------------------------

    def _log_request(self, code: int | None = None) -> None:
        """Log the request once, before the client can see the answer, so a test reading the
        log right after its call returns finds it."""
        if self._recorded:
            return
        self._recorded = True
        if code is not None:
            self._rec.code = code
        self._rec.duration = time.monotonic() - self._started
        self.server.app._record(self._rec)

    def _send(self, code: int, body: Any, headers: dict[str, Any] | None = None) -> None:
        self._log_request(code)
        if isinstance(body, str):
            data, ctype = body.encode(), "text/plain; charset=utf-8"
        elif isinstance(body, bytes):
            data, ctype = body, "application/json"
        else:
            data, ctype = json.dumps(body).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers or {}).items():
            for item in value if isinstance(value, list) else [value]:
                self.send_header(key, str(item))
        self.end_headers()
        self.wfile.write(data)

    def _cut(self) -> None:
        self._log_request()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _event(self, type_: str, obj: Any) -> None:
        self._chunk(json.dumps({"type": type_, "object": obj}).encode() + b"\n")

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _watch(self, app: FakeApiServer, res: ResourceDef, plan: WatchPlan) -> None:
        self._log_request(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if plan.error is not None:
            self._event("ERROR", plan.error.status())
            self._chunk(b"")
            return
        watcher = plan.watcher
        app._watch_opened(watcher)
        try:
            for type_, obj in plan.initial:
                self._event(type_, app.rest.out(res, plan.version, obj))
            if plan.initial_events_end:
                self._event("BOOKMARK", app.rest.bookmark(res, plan.version, initial_events_end=True))
            deadline = time.monotonic() + plan.timeout if plan.timeout else None
            last_sent = time.monotonic()
            while True:
                # A clean end still delivers what was queued (e.g. the DELETED events of a CRD
                # removal); a cut does not.
                if watcher.dropped.is_set() and (watcher.abrupt or watcher.events.empty()):
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                interval = app.bookmark_interval
                if plan.bookmarks and interval and now - last_sent >= interval:
                    self._event("BOOKMARK", app.rest.bookmark(res, plan.version))
                    last_sent = now
                try:
                    type_, obj = watcher.events.get(timeout=0.05)
                except Empty:
                    if self._client_gone():
                        self.close_connection = True
                        return
                    continue
                if type_ == "BOOKMARK":
                    if plan.bookmarks:
                        self._event("BOOKMARK", app.rest.bookmark(res, plan.version))
                elif type_ == "ERROR":
                    self._event("ERROR", obj)
                    break
                else:
                    self._event(type_, app.rest.out(res, plan.version, obj))
                last_sent = time.monotonic()
        finally:
            app._watch_closed(watcher)
        if watcher.abrupt:
            self._cut()
        else:
            self._chunk(b"")
