"""The pods bound to this node, kept current by a node-scoped list + watch.

The spec-based fingerprint rule needs pod specs (QoS, integral CPU requests), which the kubelet's
podresources API does not give. One background thread lists ``pods`` with
``fieldSelector=spec.nodeName=<node>`` and then watches from the list's resourceVersion:

* the list asks for ``resourceVersion=0`` so the apiserver answers from its watch cache (indexed
  by ``spec.nodeName``) instead of etcd; a thousand agents restarting together stay cheap;
* a watch that ends cleanly (server timeout) is resumed from the last resourceVersion seen
  (bookmarks keep it fresh), with no relist;
* ``410 Gone`` (history compacted) means "list again"; any other failure (cut connection,
  5xx, timeouts) is retried with backoff, resuming where possible, and never ends the thread.

``on_change`` is called (from the watch thread) whenever the set of pods or any pod's relevant
content changes, including when a relist finds a different set; status-only updates that leave
the :class:`~rte.model.pod.Pod` value equal do not call it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rte.agent.kube import raw_get
from rte.agent.retry import Backoff, describe, is_api_error, status_of
from rte.errors import InputError
from rte.model.pod import Pod, pod_from_manifest

log = logging.getLogger(__name__)

PodKey = tuple[str, str]

_QUICK_END = 1.0
"""Seconds: a watch that ends sooner than this without an error is backed off like a failure."""


class _Expired(Exception):
    """The watch's resourceVersion is too old (410): list again."""


PODS_PATH = "/api/v1/pods"


class NodePodWatch:
    """Pods with ``spec.nodeName == node_name``, from a background list + watch."""

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        *,
        on_change: Callable[[], None] | None = None,
        watch_seconds: int = 300,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        connect_timeout: float = 10.0,
        rng: Callable[[], float] = random.random,
    ) -> None:

        self.node_name = node_name
        self.on_change = on_change
        self.watch_seconds = watch_seconds
        self.connect_timeout = connect_timeout
        self._api = api_client
        self._backoff = Backoff(backoff_base, backoff_cap, rng)
        self._rng = rng
        self._lock = threading.Lock()
        self._pods: dict[PodKey, Pod] = {}
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None  # the open watch stream, closed by stop() to unblock the read
        self._rv: str | None = None
        self.relists = 0
        self.failures = 0

    # -- public ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"pod-watch-{self.node_name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            _interrupt(response)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def synced(self) -> bool:
        """True once the first list succeeded (the snapshot is then never older than the watch)."""
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def pods(self) -> dict[PodKey, Pod]:
        """A snapshot: ``(namespace, name)`` -> :class:`Pod`."""
        with self._lock:
            return dict(self._pods)

    # -- the thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                if self._rv is None:
                    self._relist()
                started = time.monotonic()
                self._watch()
                if time.monotonic() - started >= _QUICK_END:
                    attempt = 0  # a clean end (server timeout): resume at once
                else:
                    # A watch that ends as soon as it starts (a proxy closing streams, say) must not
                    # become a busy loop of requests: treat it like a failure.
                    self._stop.wait(self._backoff.delay(attempt))
                    attempt += 1
            except _Expired:
                log.info("pod watch on %s: resourceVersion expired, listing again", self.node_name)
                self._rv = None
                attempt = 0
            except Exception as e:
                if self._stop.is_set():
                    break
                if not is_api_error(e) and not isinstance(e, ValueError):
                    log.exception("pod watch on %s: unexpected error", self.node_name)
                else:
                    log.warning("pod watch on %s failed: %s", self.node_name, describe(e))
                self.failures += 1
                if status_of(e) == 410:
                    self._rv = None
                delay = self._backoff.delay_for(e, attempt)
                attempt += 1
                self._stop.wait(delay)

    def _selector(self) -> str:
        return f"spec.nodeName={self.node_name}"

    def _relist(self) -> None:
        response: Any = raw_get(
            self._api,
            PODS_PATH,
            [("fieldSelector", self._selector()), ("resourceVersion", "0")],
            timeout=(self.connect_timeout, self.connect_timeout + 60.0),
        )
        body = json.loads(response.data)
        pods: dict[PodKey, Pod] = {}
        for item in body.get("items") or []:
            pod = self._pod(item)
            if pod is not None:
                pods[pod.key] = pod
        with self._lock:
            changed = pods != self._pods
            self._pods = pods
        self._rv = str(body.get("metadata", {}).get("resourceVersion") or "") or None
        self.relists += 1
        self._synced.set()
        log.debug("pod watch on %s: listed %d pods at rv %s", self.node_name, len(pods), self._rv)
        if changed:
            self._notify()

    def _watch(self) -> None:
        # Jitter the server-side timeout so agents started together do not re-watch together.
        seconds = int(self.watch_seconds * (0.9 + 0.2 * self._rng()))
        query: list[tuple[str, str | int | bool]] = [
            ("fieldSelector", self._selector()),
            ("watch", True),
            ("allowWatchBookmarks", True),
            ("timeoutSeconds", seconds),
        ]
        if self._rv:
            query.append(("resourceVersion", self._rv))
        response: Any = raw_get(self._api, PODS_PATH, query, timeout=(self.connect_timeout, seconds + 30.0))
        with self._lock:
            self._response = response
        try:
            if self._stop.is_set():
                return
            for event in _events(response):
                self._apply(event)
                if self._stop.is_set():
                    return
        finally:
            with self._lock:
                self._response = None
            with contextlib.suppress(Exception):
                response.release_conn()

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise ValueError(f"watch error event: {obj.get('code')} {obj.get('message', '')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self._rv = str(rv)
            return
        pod = self._pod(obj)
        if pod is not None:
            with self._lock:
                if kind == "DELETED":
                    changed = self._pods.pop(pod.key, None) is not None
                else:
                    changed = self._pods.get(pod.key) != pod
                    self._pods[pod.key] = pod
            if changed:
                self._notify()
        if rv:
            self._rv = str(rv)

    def _pod(self, obj: Mapping[str, Any]) -> Pod | None:
        try:
            pod = pod_from_manifest(obj, source="pod from the apiserver")
        except InputError as e:
            log.warning("pod watch on %s: ignoring a pod: %s", self.node_name, e)
            return None
        if pod.node_name and pod.node_name != self.node_name:
            return None  # the selector is ours to trust, but a stray pod must not count
        return pod

    def _notify(self) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change()
        except Exception:
            log.exception("pod watch on %s: on_change callback failed", self.node_name)


def _interrupt(response: Any) -> None:
    """Wake the thread blocked reading ``response`` by shutting its socket down.

    ``response.close()`` would not do: it closes the buffered reader, which waits for the lock
    the reading thread holds, i.e. for the next event, which may never come.
    """
    connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _events(response: Any) -> Iterator[dict[str, Any]]:
    """Decoded watch events from a streaming response, one JSON object per line."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk if isinstance(chunk, bytes) else str(chunk).encode()
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)
