"""One list + watch loop in a background thread, in the manner of client-go's reflector.

Shared by the agent (the pods bound to its node) and the scheduler extender (NRTs, pods, Leases):

* list (paginated) and hand the whole set to ``on_list``, then watch from the list's
  resourceVersion and hand each ADDED / MODIFIED / DELETED event to ``on_event``;
* a watch that ends cleanly (the server's timeout) resumes from the last resourceVersion seen,
  kept fresh by bookmarks, without a relist; one that ends at once is backed off like a failure,
  so a proxy that closes streams cannot turn the loop into a request storm;
* ``410 Gone`` (as an ERROR event or a status) means the history moved on: list again;
* :meth:`Reflector.relist` ends the watch and lists again now, for a caller that must know the
  state as of a moment (a new leader): it waits until :attr:`Reflector.listed` reaches the number
  returned, that of a list begun after the call;
* any other failure (refused or cut connection, 5xx, 403 before RBAC is granted) is retried with
  jittered exponential backoff. Nothing ends the thread but :meth:`Reflector.stop`; a malformed
  object is logged and skipped, never fatal.

``list_call`` is any callable taking the Kubernetes client's list keywords (``limit``,
``_continue``, ``watch``, ``resource_version``, ``allow_watch_bookmarks``, ``timeout_seconds``,
``_preload_content``, ``_request_timeout``) and returning the raw HTTP response: a generated
``list_*`` method, or an adapter over a plain GET. Bodies are decoded as JSON here; the callers'
parsers take the wire format, which is several times cheaper than the client's model classes.
This module imports no Kubernetes code itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rte.errors import InputError
from rte.runtime.ratelimit import backoff_delay

log = logging.getLogger(__name__)

_EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")
"""The events handed to ``on_event``; BOOKMARK and ERROR are the reflector's own business."""

_QUICK_END = 1.0
"""Seconds: a watch ending sooner than this without an error is backed off like a failure, so a
proxy that closes streams at once cannot turn the loop into a request storm."""

Obj = Mapping[str, Any]


class _Relist(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def _describe(exc: BaseException) -> str:
    status = _status(exc)
    if status is None:
        return f"{type(exc).__name__}: {exc}"
    return f"{status} {getattr(exc, 'reason', '') or ''}".strip()


def _unblock(response: Any) -> None:
    """Make the thread reading ``response`` return, by shutting the socket down under it.

    Not ``response.close()``: closing the buffered reader waits for the lock the reading thread
    holds until the next event arrives, which may be minutes away.
    """
    connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _events(response: Any) -> Iterator[dict[str, Any]]:
    """Decoded watch events from a streaming response (one JSON object per line)."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        data = chunk if isinstance(chunk, bytes) else str(chunk).encode()
        buffer += data
        if b"\n" not in data:
            continue
        # All the chunk's lines at once: splitting one line off at a time copied the rest of the
        # buffer for each, quadratic in the events a chunk holds when a busy watch batches them.
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _objects_of_page(data: bytes) -> tuple[Mapping[str, Any], Iterable[Obj]]:
    """A list page's metadata and its objects, decoded whole."""
    body = json.loads(data)
    page = (i for i in body.get("items") or () if isinstance(i, Mapping))
    return body.get("metadata") or {}, page


class Reflector:
    """List + watch one resource in a background thread; see the module docstring."""

    def __init__(
        self,
        name: str,
        list_call: Callable[..., Any],
        *,
        on_list: Callable[[list[Any]], None],
        on_event: Callable[[str, Obj], None],
        read_item: Callable[[Any], Any] | None = None,
        decode_page: Callable[[bytes], tuple[Mapping[str, Any], Iterable[Any]]] | None = None,
        page_size: int = 500,
        watch_seconds: int = 300,
        connect_timeout: float = 10.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        rng: Callable[[], float] = random.random,
        list_resource_version: str | None = None,
    ) -> None:
        """``list_resource_version="0"`` lets the apiserver answer lists from its watch cache
        (cheap, possibly a little stale) instead of a quorum read from etcd.

        ``read_item``, when given, turns each listed object into what ``on_list`` receives as its
        page arrives, so that a page's decoded JSON is dropped before the next one is read: a
        list of 20 000 NRTs is otherwise held whole as dicts until ``on_list`` (hundreds of MiB
        of peak, which the process keeps as resident memory).

        ``decode_page``, when given, splits a page's bytes into its list metadata and its items
        (what ``read_item`` then receives), in place of decoding the whole page to dicts and
        passing on each object."""
        self.name = name
        self.list_resource_version = list_resource_version
        self._list_call = list_call
        self._on_list = on_list
        self._on_event = on_event
        self._read_item = read_item
        self._decode_page = decode_page or _objects_of_page
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.connect_timeout = connect_timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._rng = rng
        self._rv: str | None = None
        self._relist = False
        self._lists_started = 0
        self.listed = 0
        """The number of the last list delivered, counting every list begun (failed ones too)."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None
        self._thread: threading.Thread | None = None
        self.synced = threading.Event()
        self.lists = 0
        self.failures = 0
        self.last_error = ""

    def start(self) -> Reflector:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=f"watch-{self.name}", daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            _unblock(response)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def relist(self) -> int:
        """List again at once, ending the watch in progress (no backoff, no failure counted).

        Returns the value :attr:`listed` reaches once a list begun after this call was delivered.
        """
        with self._lock:
            self._relist = True
            response = self._response
            ticket = self._lists_started + 1
        if response is not None:
            _unblock(response)
        return ticket

    def _delay(self, attempt: int) -> float:
        return backoff_delay(attempt, self.backoff_base, self.backoff_cap, self._rng)

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                if self._rv is None or self._relist:
                    self._relist = False
                    self._list()
                started = time.monotonic()
                self._watch()
                if self._relist or time.monotonic() - started >= _QUICK_END:
                    attempt = 0
                    continue
                self._stop.wait(self._delay(attempt))
                attempt += 1
            except _Relist:
                log.info("%s watch: resourceVersion expired, listing again", self.name)
                self._rv = None
                attempt = 0
            except Exception as e:
                if self._stop.is_set():
                    break
                if self._relist:  # relist() cut the watch: not a failure
                    continue
                self.failures += 1
                self.last_error = _describe(e)
                if _status(e) == 410:
                    self._rv = None
                log.warning("%s watch failed (%s); retrying", self.name, self.last_error)
                self._stop.wait(self._delay(attempt))
                attempt += 1

    def _list(self) -> None:
        with self._lock:
            self._lists_started += 1
            number = self._lists_started
        items: list[Any] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self.page_size}
            if self.list_resource_version is not None and not token:
                kwargs["resource_version"] = self.list_resource_version
            if token:
                kwargs["_continue"] = token
            response = self._list_call(
                _preload_content=False,
                _request_timeout=(self.connect_timeout, self.connect_timeout + 60.0),
                **kwargs,
            )
            metadata, page = self._decode_page(response.data)
            items.extend(page if self._read_item is None else map(self._read_item, page))
            token = metadata.get("continue") or None
            if not token:
                rv = str(metadata.get("resourceVersion") or "") or None
                break
        self._deliver_list(items)
        self._rv = rv
        self.listed = number
        self.lists += 1
        self.synced.set()
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(items), rv)

    def _deliver_list(self, items: list[Any]) -> None:
        try:
            self._on_list(items)
        except Exception:
            log.exception("%s: handling the list failed", self.name)

    def _watch(self) -> None:
        # Jitter the server-side timeout so that replicas started together do not re-watch together.
        seconds = max(1, int(self.watch_seconds * (0.9 + 0.2 * self._rng())))
        response = self._list_call(
            watch=True,
            resource_version=self._rv,
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _preload_content=False,
            _request_timeout=(self.connect_timeout, seconds + 30.0),
        )
        with self._lock:
            self._response = response
        ended = False
        try:
            if self._stop.is_set() or self._relist:
                return  # stop() or relist() ran before the response was published: it could not unblock us
            for event in _events(response):
                self._handle(event)
                if self._stop.is_set():
                    return
            ended = True
        finally:
            with self._lock:
                self._response = None
            with contextlib.suppress(Exception):
                if ended:
                    response.release_conn()  # the server ended the stream: the connection is clean
                else:
                    # Left mid-stream (stop, a bad event): the server still holds the watch open
                    # and the socket has unread data, so close it instead of pooling it.
                    response.close()

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            raise ValueError(f"watch event without an object: {kind!r}")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Relist()
            raise ValueError(f"watch ERROR event: {obj.get('code')} {obj.get('message', '')}")
        metadata = obj.get("metadata")
        rv = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
        if kind in _EVENT_TYPES:
            try:
                self._on_event(str(kind), obj)
            except InputError as e:
                log.warning("%s: ignoring a malformed object: %s", self.name, e)
            except Exception:
                log.exception("%s: handling a %s event failed", self.name, kind)
        if rv:
            self._rv = str(rv)
