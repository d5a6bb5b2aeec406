"""A watch on the agent's own NRT (one object), so a deletion or a foreign edit is repaired at
once instead of at the next resync (up to ``resync_interval``, 60 s by default; issue #26 item 7).

One :class:`~rte.runtime.reflector.Reflector` thread lists and watches
``noderesourcetopologies`` with ``fieldSelector=metadata.name=<node>``: the same machinery, and
the same resilience, as the pod watch (:mod:`rte.agent.watch.podwatch`). Each event is judged against
what the agent last wrote or confirmed (:meth:`rte.agent.publish.publisher.Publisher.differs`):

* ``DELETED``: someone deleted the object; repair (recreate it);
* ``ADDED``/``MODIFIED`` whose content differs from ours in the fields the agent owns: someone
  edited it; repair (patch it back). Events of the agent's own writes, and foreign edits of
  fields the agent does not own (another controller's label), are equal and change nothing;
* the initial list (and each relist) is judged the same way, except that an empty list before
  the agent ever published is not a deletion.

A repair is a trigger (``nrt-changed``) for the loop, which re-reads the stored object and
writes only what differs. The loop's write budget (``publish_qps``/``publish_burst``) bounds
the repairs' requests, so a controller fighting over the object costs at most that rate; the
watch adds its own cap (:data:`REPAIR_INTERVAL`) on how often it asks, and logs the first
foreign change and then one line per :data:`REPAIR_LOG_INTERVAL` at most.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rte.model.nrt import GROUP, PLURAL, VERSION
from rte.runtime.kubeclient import raw_list_call
from rte.runtime.reflector import Obj, Reflector

log = logging.getLogger(__name__)

REPAIR_INTERVAL = 1.0
"""Seconds: at most one repair trigger this often (further changes meanwhile are coalesced
into one trigger when the interval ends)."""

REPAIR_LOG_INTERVAL = 60.0
"""Seconds between two warnings about foreign changes (each change is counted all the same)."""


class WrittenObject(Protocol):
    """What the watch needs of :class:`rte.agent.publish.publisher.Publisher`."""

    def differs(self, stored: Mapping[str, Any]) -> bool | None: ...


class OwnNrtWatch:
    """Calls ``on_repair(what)`` when NRT ``<node_name>`` is deleted or edited by someone else.

    ``what`` is ``"deleted"`` or ``"edited"`` (a metric label). Callbacks run on the watch
    thread, or on a timer thread when a repair was held back by :data:`REPAIR_INTERVAL`.
    """

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        written: WrittenObject,
        on_repair: Callable[[str], None],
        *,
        watch_seconds: int = 300,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        connect_timeout: float = 10.0,
        repair_interval: float = REPAIR_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.node_name = node_name
        self._written = written
        self._on_repair = on_repair
        self._interval = repair_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last_repair = -float("inf")
        self._held: str | None = None  # a repair waiting for the interval to end
        self._timer: threading.Timer | None = None
        self._last_warning = -float("inf")
        self.repairs = 0
        self.events = 0
        """Watch events handled (tests wait on it)."""
        path = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
        self._reflector = Reflector(
            f"NRT {node_name}",
            raw_list_call(api_client, path, [("fieldSelector", f"metadata.name={node_name}")]),
            on_list=self._on_list,
            on_event=self._on_event,
            watch_seconds=watch_seconds,
            connect_timeout=connect_timeout,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            rng=rng,
        )

    def start(self) -> None:
        self._reflector.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self._reflector.stop(timeout)

    @property
    def running(self) -> bool:
        return self._reflector.running

    def synced(self) -> bool:
        return self._reflector.synced.is_set()

    # -- reflector callbacks (the watch thread) --------------------------------------------------

    def _on_list(self, items: list[Obj]) -> None:
        mine = [item for item in items if _name(item) == self.node_name]
        if not mine:
            # None stored: a deletion only if the agent has written (or confirmed) one before.
            if self._written.differs({}) is not None:
                self._repair("deleted")
            return
        self._judge(mine[-1])

    def _on_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        self.events += 1  # only this thread writes it
        if _name(obj) != self.node_name:
            return  # the selector is ours to trust, but another node's object is not ours
        if kind == "DELETED":
            if self._written.differs({}) is not None:
                self._repair("deleted")
            return
        self._judge(obj)

    def _judge(self, stored: Mapping[str, Any]) -> None:
        if self._written.differs(stored):
            self._repair("edited")

    # -- rate limit ----------------------------------------------------------------------------

    def _repair(self, what: str) -> None:
        now = self._clock()
        with self._lock:
            self.repairs += 1
            if now - self._last_warning >= REPAIR_LOG_INTERVAL:
                self._last_warning = now
                log.warning(
                    "NRT %s was %s by someone else; repairing it (further changes are repaired"
                    " without a line for %.0fs)",
                    self.node_name,
                    what,
                    REPAIR_LOG_INTERVAL,
                )
            wait = self._last_repair + self._interval - now
            if wait > 0:
                if self._held is None:
                    self._timer = threading.Timer(wait, self._release)
                    self._timer.daemon = True
                    self._timer.start()
                self._held = what if self._held is None or what == "deleted" else self._held
                return
            self._last_repair = now
        self._call(what)

    def _release(self) -> None:
        with self._lock:
            what, self._held, self._timer = self._held, None, None
            self._last_repair = self._clock()
        if what is not None:
            self._call(what)

    def _call(self, what: str) -> None:
        try:
            self._on_repair(what)
        except Exception:
            log.exception("NRT watch on %s: on_repair callback failed", self.node_name)


def _name(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    return meta.get("name") if isinstance(meta, Mapping) else None
