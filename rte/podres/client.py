"""gRPC client of the kubelet podresources v1 API.

Error mapping, so callers never see grpc exceptions:

* ``UNIMPLEMENTED``, or a "... disabled" message (a feature gate is off) -> :class:`NotSupportedError`:
  an older kubelet; degrade instead of retrying (crash-looping on this is NFD issue #810).
* ``Get`` of a pod the kubelet does not know -> ``None``.
* anything else (``UNAVAILABLE`` while the kubelet restarts, ``DEADLINE_EXCEEDED``,
  ``RESOURCE_EXHAUSTED`` from its rate limit, ...) -> :class:`UnavailableError`: retry later.
* a response that does not decode -> :class:`InputError`.

One channel serves the client's whole life: grpc reconnects by itself after a kubelet restart,
and the reconnect backoff is capped low so recovery takes seconds, not grpc's default 2 minutes.
"""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import grpc
from google.protobuf.message import DecodeError

from rte.errors import InputError, NotSupportedError, RteError, UnavailableError
from rte.podres import convert
from rte.podres.types import AllocatableResources, PodResources
from rte.podres.v1 import api_pb2
from rte.runtime.ratelimit import TokenBucket

if TYPE_CHECKING:
    from google.protobuf.message import Message

log = logging.getLogger(__name__)

_M = TypeVar("_M", bound="Message")

MAX_RECEIVE_BYTES = 16 * 1024 * 1024
_SERVICE = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"].full_name
_METHODS = ("List", "GetAllocatableResources", "Get")


def target_of(endpoint: str) -> str:
    """A gRPC target for ``endpoint``; a bare filesystem path becomes ``unix://<path>``."""
    return f"unix://{endpoint}" if endpoint.startswith("/") else endpoint


class PodResourcesClient:
    """The podresources v1 calls over the kubelet socket (behind
    :class:`~rte.podres.reader.SocketReader`, the kubelet reader the agent uses).

    ``endpoint`` is a gRPC target (``unix:///var/lib/kubelet/pod-resources/kubelet.sock``) or a
    socket path. ``timeout`` bounds each call. ``qps``/``burst`` feed a client-side token bucket
    that keeps us well under the kubelet's shared 100 QPS / burst 10; ``qps=None`` disables it.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float = 10.0,
        qps: float | None = 20.0,
        burst: int = 5,
        max_receive_bytes: int = MAX_RECEIVE_BYTES,
        max_reconnect_backoff: float = 2.0,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._bucket = TokenBucket(qps, burst) if qps else None
        backoff_ms = max(100, int(max_reconnect_backoff * 1000))
        self._channel = grpc.insecure_channel(
            target_of(endpoint),
            options=[
                ("grpc.max_receive_message_length", max_receive_bytes),
                ("grpc.initial_reconnect_backoff_ms", min(100, backoff_ms)),
                ("grpc.min_reconnect_backoff_ms", min(100, backoff_ms)),
                ("grpc.max_reconnect_backoff_ms", backoff_ms),
            ],
        )
        # Raw bytes in and out: decoding ourselves turns a bad response into an InputError.
        self._calls = {m: self._channel.unary_unary(f"/{_SERVICE}/{m}") for m in _METHODS}

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until the kubelet socket accepts connections; ``None`` waits forever.

        Logs a line at growing intervals (0.25 s doubling to 8 s) while waiting, and raises
        :class:`UnavailableError` when ``timeout`` runs out.
        """
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        interval = 0.25
        while True:
            step = interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic()))
            future = grpc.channel_ready_future(self._channel)
            try:
                future.result(timeout=step)
                return
            except grpc.FutureTimeoutError:
                future.cancel()
            waited = time.monotonic() - start
            if deadline is not None and time.monotonic() >= deadline:
                raise UnavailableError(
                    f"kubelet podresources endpoint {self.endpoint} not ready after {waited:.1f}s "
                    "(is the kubelet running and its pod-resources directory mounted?)"
                )
            log.warning(
                "waiting for kubelet podresources endpoint %s: not ready after %.1fs", self.endpoint, waited
            )
            interval = min(interval * 2, 8.0)

    def list(self) -> tuple[PodResources, ...]:
        return convert.list_from_proto(self.list_message(), f"kubelet List response from {self.endpoint}")

    def list_message(self) -> api_pb2.ListPodResourcesResponse:
        """The List response as the protobuf message, for callers that decode only what changed."""
        return self._call("List", api_pb2.ListPodResourcesRequest(), api_pb2.ListPodResourcesResponse)

    def list_wire(self) -> bytes:
        """The List response as it came off the wire, undecoded (see :mod:`rte.podres.wire`)."""
        return self._raw("List", api_pb2.ListPodResourcesRequest())

    def decode(self, method: str, raw: bytes, response_type: type[_M]) -> _M:
        """``raw`` decoded as ``response_type``; :class:`InputError` naming the call when it does not."""
        try:
            return response_type.FromString(raw)
        except DecodeError as e:
            raise InputError(
                f"kubelet {method} response from {self.endpoint}", f"does not decode: {e}"
            ) from e

    def get_allocatable(self) -> AllocatableResources:
        return convert.allocatable_from_proto(
            self.allocatable_message(), f"kubelet GetAllocatableResources response from {self.endpoint}"
        )

    def allocatable_message(self) -> api_pb2.AllocatableResourcesResponse:
        """The GetAllocatableResources response as the protobuf message (see :meth:`list_message`)."""
        return self._call(
            "GetAllocatableResources",
            api_pb2.AllocatableResourcesRequest(),
            api_pb2.AllocatableResourcesResponse,
        )

    def get(self, namespace: str, name: str) -> PodResources | None:
        request = api_pb2.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
        try:
            msg = self._call("Get", request, api_pb2.GetPodResourcesResponse)
        except _PodNotFound:
            return None
        return convert.get_from_proto(msg, f"kubelet Get response from {self.endpoint}")

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _raw(self, method: str, request: Message) -> bytes:
        if self._bucket is not None:
            self._bucket.acquire()
        try:
            raw: bytes = self._calls[method](request.SerializeToString(), timeout=self.timeout)
        except grpc.RpcError as e:
            raise self._error(method, e) from e
        return raw

    def _call(self, method: str, request: Message, response_type: type[_M]) -> _M:
        return self.decode(method, self._raw(method, request), response_type)

    def _error(self, method: str, e: grpc.RpcError) -> RteError:
        code = e.code()
        details = e.details() or ""
        where = f"kubelet podresources {method} at {self.endpoint}"
        if code == grpc.StatusCode.UNIMPLEMENTED or "disabled" in details.lower():
            return NotSupportedError(f"{where} is not supported: {details or code.name}")
        if method == "Get" and "not found" in details.lower():
            return _PodNotFound(details)
        return UnavailableError(f"{where} failed: {code.name}: {details}")


class _PodNotFound(RteError):
    """Internal: the kubelet answered Get with "pod ... not found"; ``get`` returns None."""
