"""The kubelet readers: a cheap List poll, plus allocatable on demand (rte.podres.source).

The podresources API has no Watch, so the agent polls List a few times a second. At that rate
the cost of turning the response into :mod:`rte.podres.types` matters (about 7 ms for 250 pods
against 0.1 ms to parse the protobuf), so each poll computes a digest of the response's bytes
as received and, only when they changed, cuts them into each pod's bytes
(:mod:`rte.podres.wire`) and decodes the pods it has not decoded before (kept in a small cache
keyed by each pod's own bytes). The pods it has seen come back as the same objects, which is
what lets :mod:`rte.agent.compute.podtally` skip them. ``GetAllocatableResources``, re-read every few
seconds for device health, is decoded again only when its bytes changed too.

A scenario directory (``rte run --podresources DIR``) is read through
:class:`~rte.podres.files.PodResourcesFiles`; its files are re-read on every poll.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from rte.errors import InputError
from rte.podres.source import KubeletReader, Listing, PodChange, identity_change
from rte.podres.types import AllocatableResources

if TYPE_CHECKING:
    from rte.podres.client import PodResourcesClient
    from rte.podres.wire import Records


LISTED_PODS_PER_MAX_POD = 4
"""The List cap is this many times the kubelet's ``maxPods``. The kubelet admits at most maxPods
pods, and since 1.34 List holds active pods only (``GetActivePods``, kubelet
pkg/kubelet/apis/podresources/server_v1.go); older kubelets list terminal pods too until they
are deleted, so the margin is wide: a List four times over what the kubelet may run is broken,
not busy."""

UNKNOWN_MAX_PODS = 1000
"""The ``maxPods`` assumed when the kubelet config is unknown: above the largest values in use
(the kubelet's default is 110, managed offerings go to a few hundred), so no real node trips it."""


def pod_limit(max_pods: int | None, override: int = 0) -> int:
    """The most pods one List answer may hold: ``override`` when set, else 4 x ``max_pods``
    (the kubelet config's maxPods; None when unknown)."""
    if override > 0:
        return override
    return LISTED_PODS_PER_MAX_POD * (max_pods if max_pods is not None else UNKNOWN_MAX_PODS)


def too_many_pods(source: str, limit: int, count: int | None = None) -> InputError:
    """The error for a List answer holding more than ``limit`` pods (``count`` of them when
    known; the socket reader stops counting once past the limit)."""
    many = f"more than {limit}" if count is None else str(count)
    early = "; refused before decoding it" if count is None else ""
    return InputError(
        source,
        f"lists {many} pods, above the limit of {limit} (4 x the kubelet's maxPods, or the"
        f" max_listed_pods setting){early}",
    )


class SocketReader:
    """Polls the kubelet's gRPC socket, decoding only what changed."""

    def __init__(self, client: PodResourcesClient, pod_limit: int | None = None) -> None:
        self._client = client
        self.endpoint = client.endpoint
        self.pod_limit = pod_limit
        self._records: Records | None = None  # the last List's records, one per pod of _last
        self._last: Listing | None = None
        self._allocatable: tuple[bytes, AllocatableResources] | None = None

    def wait_ready(self, timeout: float) -> None:
        self._client.wait_ready(timeout=timeout)

    def list(self) -> Listing:
        from rte.podres import convert
        from rte.podres.v1 import api_pb2
        from rte.podres.wire import Records, changed_records, records
        from rte.podres.wire import count_records as wirecount

        # The response's own bytes keep the client's error mapping and rate limit but skip
        # decoding: an unchanged List is one digest, and only the pods whose bytes are new go
        # through the slow conversion below.
        wire = self._client.list_wire()
        digest = hashlib.blake2b(wire, digest_size=16).digest()
        last, old = self._last, self._records
        if last is not None and last.digest == digest:
            return last
        limit = self.pod_limit
        # Counted before any pod is cut out or decoded: 400 000 pods fit under the 16 MiB gRPC
        # cap, and decoding them would take minutes and hundreds of MiB (issue #26 item 4).
        if limit is not None and wirecount(wire, limit) > limit:
            raise too_many_pods(f"kubelet List response from {self.endpoint}", limit)
        found = changed_records(old, wire) if old is not None else None
        if found is not None:
            new, head, tail = found
        else:
            head = tail = 0
            cut = records(wire)
            if cut is None:  # not the plain form: decode it all, which reports what is wrong
                message = self._client.decode("List", wire, api_pb2.ListPodResourcesResponse)
                encoded = [msg.SerializeToString(deterministic=True) for msg in message.pod_resources]
                cut = Records(wire, None, encoded)
            new = cut
        # Pods between the unchanged head and tail: those whose bytes were listed there before
        # are the same objects again, the others are decoded (a pod listed twice, once each:
        # keeping every new record's bytes for that would hold a whole first List's at once).
        before = last.pods if last is not None else ()
        old_middle = before[head : len(before) - tail]
        known = dict(zip(old.iter_payloads(head, len(before) - tail), old_middle, strict=True)) if old else {}
        source = f"kubelet List response from {self.endpoint}"
        middle = []
        for i, data in enumerate(new.iter_payloads(head, len(new) - tail), start=head):
            pod = known.get(data)
            if pod is None:
                msg = self._client.decode("List", data, api_pb2.PodResources)
                pod = convert.pod_from_proto(msg, source, f"pod_resources[{i}]")
            middle.append(pod)
        pods = before[:head] + tuple(middle) + before[len(before) - tail :]
        change = identity_change(old_middle, middle)
        self._records = new
        self._last = Listing(digest, pods, PodChange(before, change.gone, change.new))
        return self._last

    def get_allocatable(self) -> AllocatableResources:
        from rte.podres import convert

        # Asked every few seconds for device health; an unchanged answer is not decoded again.
        message = self._client.allocatable_message()
        digest = hashlib.blake2b(message.SerializeToString(deterministic=True), digest_size=16).digest()
        if self._allocatable is None or self._allocatable[0] != digest:
            source = f"kubelet GetAllocatableResources response from {self.endpoint}"
            self._allocatable = (digest, convert.allocatable_from_proto(message, source))
        return self._allocatable[1]

    def close(self) -> None:
        self._client.close()


class DirectoryReader:
    """Reads a scenario directory in the fixture layout; always ready."""

    def __init__(self, directory: Path) -> None:
        from rte.podres.files import PodResourcesFiles

        self._files = PodResourcesFiles(directory)
        self.endpoint = str(directory)
        self.pod_limit: int | None = None

    def wait_ready(self, timeout: float) -> None:
        return None  # files are there or they are not: nothing to wait for

    def list(self) -> Listing:
        pods = self._files.list()
        if self.pod_limit is not None and len(pods) > self.pod_limit:  # files are small: counted after
            raise too_many_pods(f"List file in {self.endpoint}", self.pod_limit, len(pods))
        digest = hashlib.blake2b(repr(pods).encode(), digest_size=16).digest()
        return Listing(digest, pods)

    def get_allocatable(self) -> AllocatableResources:
        return self._files.get_allocatable()

    def close(self) -> None:
        return None


# A one-shot command (rte dump, rte fingerprint) makes three calls: the kubelet's own limit
# (100 QPS, burst 10) is far away.
ONE_SHOT_QPS = 20.0
ONE_SHOT_BURST = 5


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def endpoint_problem(endpoint: str, *, must_exist: bool = True) -> str | None:
    """Why ``endpoint`` cannot be a podresources endpoint, or None when it can.

    Accepted: ``unix://PATH`` or ``unix:PATH`` (the kubelet's socket), ``file://DIR`` (a scenario
    directory), or a bare path to either. ``must_exist`` False lets a socket that is not there
    yet pass (the daemon waits for the kubelet); a regular file or another scheme never passes.
    """
    kind = "either"
    if endpoint.startswith("unix:"):
        path, kind = endpoint.removeprefix("unix:").removeprefix("//"), "socket"
    elif endpoint.startswith("file://"):
        path, kind = endpoint.removeprefix("file://"), "directory"
    elif not endpoint.startswith(("/", ".")) and (scheme := _SCHEME.match(endpoint)):
        return (
            f"unsupported scheme {scheme.group()!r}"
            " (expected unix://SOCKET, a socket path or a scenario directory)"
        )
    else:
        path = endpoint
    if not path:
        return "names no path"
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such socket or directory" if must_exist else None
    except OSError as e:
        return f"cannot be inspected: {e.strerror or e}"
    if stat.S_ISSOCK(mode):
        return None if kind != "directory" else "is a socket, not a scenario directory"
    if stat.S_ISDIR(mode):
        return None if kind != "socket" else "is a directory, not a socket"
    if stat.S_ISREG(mode):
        return "is a regular file, not a socket or a scenario directory"
    return "is neither a socket nor a scenario directory"


def may_answer(endpoint: str) -> bool:
    """False when ``endpoint`` names a unix socket that does not exist: no kubelet can answer.

    One-shot commands then skip importing grpc and waiting for a socket that is not there.
    """
    if endpoint.startswith("unix://"):
        path: str | None = endpoint[len("unix://") :]
    elif endpoint.startswith(("/", ".")):
        path = endpoint
    else:
        path = None
    return path is None or os.path.exists(path)


def open_reader(endpoint: str, *, timeout: float, qps: float, burst: int) -> KubeletReader:
    """A reader for a socket endpoint (``unix://...`` or a path) or a scenario directory."""
    directory = endpoint.removeprefix("file://")
    if Path(directory).is_dir():
        return DirectoryReader(Path(directory))
    from rte.podres.client import PodResourcesClient

    return SocketReader(PodResourcesClient(endpoint, timeout=timeout, qps=qps, burst=burst))
