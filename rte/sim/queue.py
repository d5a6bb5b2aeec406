"""kube-scheduler's scheduling queue, reduced to what changes pending times.

Three places a pending pod can be, as in the real queue:

* **active**: waiting for a scheduling cycle, higher priority first, then oldest first
  (kube-scheduler's default ``PrioritySort``);
* **unschedulable**: its last cycle found no node; it stays here until a cluster event that may
  help (an NRT added or updated, a pod deleted or finished) or until it has waited
  :data:`MAX_UNSCHEDULABLE` (the real ``podMaxInUnschedulablePodsDuration``, checked every
  :data:`LEFTOVER_CHECK` seconds);
* **backoff**: moved by an event but still inside its backoff (1 s doubling per failed attempt,
  at most 10 s: the real defaults); it becomes active when the backoff expires.

Entries are integer pod ids; ties are broken by insertion sequence, so runs are reproducible.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE = 300.0
LEFTOVER_CHECK = 30.0


def backoff(attempts: int) -> float:
    """The backoff after ``attempts`` failed scheduling attempts."""
    if attempts <= 0:
        return 0.0
    return min(MAX_BACKOFF, INITIAL_BACKOFF * float(2 ** (attempts - 1)))


@dataclass
class SchedulingQueue:
    active: list[tuple[int, float, int, int]] = field(default_factory=list)
    """Heap of (minus priority, enqueue time, seq, pod id)."""
    backoff_heap: list[tuple[float, int, int]] = field(default_factory=list)
    """Heap of (backoff expiry, seq, pod id)."""
    unschedulable: dict[int, float] = field(default_factory=dict)
    """pod id -> when it became unschedulable (insertion order kept)."""
    attempts: dict[int, int] = field(default_factory=dict)
    last_attempt: dict[int, float] = field(default_factory=dict)
    priority: dict[int, int] = field(default_factory=dict)
    """pod id -> its priority (absent: 0)."""
    _seq: int = 0

    def __len__(self) -> int:
        return len(self.active) + len(self.backoff_heap) + len(self.unschedulable)

    @property
    def refused(self) -> int:
        """Pods a cycle found no node for, waiting in backoff or for a cluster event."""
        return len(self.backoff_heap) + len(self.unschedulable)

    def _push(self, heap: list[tuple[float, int, int]], key: float, pod: int) -> None:
        self._seq += 1
        heapq.heappush(heap, (key, self._seq, pod))

    def _activate(self, pod: int, now: float) -> None:
        self._seq += 1
        heapq.heappush(self.active, (-self.priority.get(pod, 0), now, self._seq, pod))

    def add(self, pod: int, now: float, priority: int = 0) -> None:
        """A new pod (or a replacement for a failed one)."""
        self.attempts[pod] = 0
        if priority:
            self.priority[pod] = priority
        self._activate(pod, now)

    def pop(self, now: float) -> int | None:
        """The next pod to schedule, moving expired backoffs to active first."""
        self.flush_backoff(now)
        if not self.active:
            return None
        return heapq.heappop(self.active)[3]

    def next_backoff_expiry(self) -> float | None:
        return self.backoff_heap[0][0] if self.backoff_heap else None

    def failed(self, pod: int, now: float) -> None:
        """The pod's cycle found no node."""
        self.attempts[pod] = self.attempts.get(pod, 0) + 1
        self.last_attempt[pod] = now
        self.unschedulable[pod] = now

    def done(self, pod: int) -> None:
        """The pod was placed (or deleted): forget its bookkeeping."""
        self.priority.pop(pod, None)
        self.attempts.pop(pod, None)
        self.last_attempt.pop(pod, None)
        self.unschedulable.pop(pod, None)

    def _requeue(self, pod: int, now: float) -> None:
        expiry = self.last_attempt.get(pod, now) + backoff(self.attempts.get(pod, 0))
        if expiry <= now:
            self._activate(pod, now)
        else:
            self._push(self.backoff_heap, expiry, pod)

    def move_all(self, now: float) -> int:
        """A cluster event: every unschedulable pod goes to active or backoff. Returns how many."""
        moved = list(self.unschedulable)
        self.unschedulable.clear()
        for pod in moved:
            self._requeue(pod, now)
        return len(moved)

    def flush_backoff(self, now: float) -> None:
        while self.backoff_heap and self.backoff_heap[0][0] <= now:
            _, _, pod = heapq.heappop(self.backoff_heap)
            self._activate(pod, now)

    def flush_leftover(self, now: float) -> int:
        """Move pods unschedulable for longer than :data:`MAX_UNSCHEDULABLE`."""
        old = [p for p, since in self.unschedulable.items() if now - since > MAX_UNSCHEDULABLE]
        for pod in old:
            del self.unschedulable[pod]
            self._requeue(pod, now)
        return len(old)
