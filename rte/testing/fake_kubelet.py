"""A fake kubelet podresources endpoint: a real gRPC server on a unix socket.

It serves ``v1.PodResourcesLister`` (List, GetAllocatableResources, Get) from a scenario directory
in the fixture layout (``list.*``, ``get_allocatable_resources.*``; see rte/podres/files.py), so
the agent can be tried on a laptop and tested across a real protocol boundary.

Run it:  python -m rte.testing.fake_kubelet --socket /tmp/kubelet.sock --scenario tests/fixtures/podres/X

In tests::

    with FakeKubelet(scenario=path) as kubelet:      # socket in a fresh short temp dir
        client = PodResourcesClient(kubelet.endpoint)
        kubelet.add_pod(pod); kubelet.fail("Get", grpc.StatusCode.UNKNOWN, "...")
        kubelet.stop(); kubelet.start()               # the socket file goes away and comes back
        assert kubelet.calls("List") == 3

Behaviour copied from the kubelet: a token bucket of 100 QPS / burst 10 shared by all methods
(RESOURCE_EXHAUSTED "rejected by rate limit"); Get of an unknown pod fails with UNKNOWN "pod <name>
in namespace <ns> not found"; a scenario without an allocatable file answers
GetAllocatableResources with UNIMPLEMENTED, as a 1.20 kubelet would. Every method is thread-safe.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from concurrent import futures
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from rte.podres.v1 import api_pb2
from rte.runtime.ratelimit import TokenBucket

SERVICE = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"].full_name
METHODS = ("List", "GetAllocatableResources", "Get")
KUBELET_RATE_LIMIT = (100.0, 10)
_SUFFIXES = (".pb", ".protojson.json", ".gojson.json", ".json")


def read_response(directory: Path, stem: str, message: Message) -> bool:
    """Fill ``message`` from ``<directory>/<stem>.<encoding>``; False if no such file exists."""
    for suffix in _SUFFIXES:
        path = directory / f"{stem}{suffix}"
        if path.is_file():
            if suffix == ".pb":
                message.ParseFromString(path.read_bytes())
            else:  # json_format takes both key styles and int64 as numbers or strings
                json_format.Parse(path.read_text(), message, ignore_unknown_fields=True)
            return True
    return False


class FakeKubelet:
    """The fake endpoint; ``socket_path=None`` puts the socket in a new short temp dir.

    ``rate_limit`` is (qps, burst) like the kubelet's, or None for no limit.
    """

    def __init__(
        self,
        socket_path: str | Path | None = None,
        scenario: str | Path | None = None,
        *,
        rate_limit: tuple[float, int] | None = KUBELET_RATE_LIMIT,
    ) -> None:
        # unix socket paths are limited to ~107 bytes, which pytest's tmp_path can exceed.
        self._own_dir: Path | None = None
        if socket_path is None:
            self._own_dir = Path(tempfile.mkdtemp(prefix="fkl-", dir="/tmp"))
            socket_path = self._own_dir / "kubelet.sock"
        self.socket_path = Path(socket_path)
        self._lock = threading.RLock()
        self._pods: list[api_pb2.PodResources] = []
        self._allocatable: api_pb2.AllocatableResourcesResponse | None = (
            api_pb2.AllocatableResourcesResponse()
        )
        self._faults: dict[str, tuple[grpc.StatusCode, str]] = {}
        self._unhealthy: set[tuple[str, str]] = set()
        self._raw: dict[str, bytes] = {}
        self._delays: dict[str, float] = {}
        self._stopping = threading.Event()
        self._calls: Counter[str] = Counter()
        self._rejected = 0
        self._times: dict[str, list[float]] = {m: [] for m in METHODS}
        self._limiter = TokenBucket(*rate_limit) if rate_limit else None
        self._server: grpc.Server | None = None
        if scenario is not None:
            self.set_scenario(scenario)

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket_path}"

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeKubelet:
        with self._lock:
            if self._server is not None:
                return self
            self.socket_path.unlink(missing_ok=True)
            self._stopping.clear()
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            handlers = {
                "List": self._unary("List", api_pb2.ListPodResourcesRequest),
                "GetAllocatableResources": self._unary(
                    "GetAllocatableResources", api_pb2.AllocatableResourcesRequest
                ),
                "Get": self._unary("Get", api_pb2.GetPodResourcesRequest),
            }
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
            server.add_insecure_port(self.endpoint)
            server.start()
            self._server = server
        return self

    def stop(self) -> None:
        """Stop serving; the socket file is removed, as when the kubelet goes down."""
        with self._lock:
            server, self._server = self._server, None
        self._stopping.set()  # releases handlers sleeping in a delay
        if server is not None:
            server.stop(grace=None).wait()
        self.socket_path.unlink(missing_ok=True)

    @property
    def running(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        self.stop()
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def __enter__(self) -> FakeKubelet:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- what is served -----------------------------------------------------------------------

    def set_scenario(self, directory: str | Path) -> None:
        """Serve ``directory`` from now on (read once here; later edits need another call)."""
        listing = api_pb2.ListPodResourcesResponse()
        if not read_response(Path(directory), "list", listing):
            raise FileNotFoundError(f"{directory}: no list.* file")
        allocatable = api_pb2.AllocatableResourcesResponse()
        found = read_response(Path(directory), "get_allocatable_resources", allocatable)
        with self._lock:
            self._pods = list(listing.pod_resources)
            self._allocatable = allocatable if found else None

    def set_pods(self, pods: list[api_pb2.PodResources]) -> None:
        with self._lock:
            self._pods = [_copy(p) for p in pods]

    def pods(self) -> list[api_pb2.PodResources]:
        with self._lock:
            return [_copy(p) for p in self._pods]

    def add_pod(self, pod: api_pb2.PodResources) -> None:
        """Add a pod, or replace the one with the same namespace and name."""
        with self._lock:
            self.remove_pod(pod.namespace, pod.name)
            self._pods.append(_copy(pod))

    def remove_pod(self, namespace: str, name: str) -> bool:
        with self._lock:
            before = len(self._pods)
            self._pods = [p for p in self._pods if (p.namespace, p.name) != (namespace, name)]
            return len(self._pods) < before

    def set_allocatable(self, allocatable: api_pb2.AllocatableResourcesResponse | None) -> None:
        """Serve this allocatable response; None makes the RPC UNIMPLEMENTED."""
        with self._lock:
            self._allocatable = None if allocatable is None else _copy(allocatable)

    def set_device_health(self, resource: str, device_id: str, healthy: bool) -> None:
        """Mark a device unhealthy (or healthy again), as its device plugin would report it.

        Like the kubelet, GetAllocatableResources then leaves an unhealthy device out (its
        allocatable devices are the healthy ones); pods that hold it still list it.
        """
        with self._lock:
            if healthy:
                self._unhealthy.discard((resource, device_id))
            else:
                self._unhealthy.add((resource, device_id))

    # -- faults -------------------------------------------------------------------------------

    def fail(self, method: str, code: grpc.StatusCode, details: str = "") -> None:
        """Answer every call of ``method`` with this status until :meth:`clear_faults`."""
        _check(method)
        with self._lock:
            self._faults[method] = (code, details)

    def unimplemented(self, method: str) -> None:
        """Behave like a kubelet that does not have ``method`` at all."""
        self.fail(method, grpc.StatusCode.UNIMPLEMENTED, f"unknown method {method} for service {SERVICE}")

    def disable_get(self) -> None:
        """Behave like a kubelet with the KubeletPodResourcesGet gate off (before 1.34)."""
        self.fail("Get", grpc.StatusCode.UNKNOWN, "PodResources API Get method disabled")

    def serve_raw(self, method: str, data: bytes | None) -> None:
        """Answer ``method`` with these exact bytes (e.g. not a valid message); None stops it."""
        _check(method)
        with self._lock:
            if data is None:
                self._raw.pop(method, None)
            else:
                self._raw[method] = data

    def delay(self, method: str, seconds: float) -> None:
        """Answer ``method`` only after ``seconds`` (a slow kubelet); 0 removes the delay."""
        _check(method)
        with self._lock:
            self._delays[method] = seconds

    def clear_faults(self) -> None:
        """Undo :meth:`fail`, :meth:`serve_raw` and :meth:`delay`."""
        with self._lock:
            self._faults.clear()
            self._raw.clear()
            self._delays.clear()

    # -- call accounting ----------------------------------------------------------------------

    def calls(self, method: str | None = None) -> int:
        """Calls received for ``method`` (all methods if None), rate-limited ones included."""
        with self._lock:
            return self._calls[method] if method else sum(self._calls[m] for m in METHODS)

    def call_times(self, method: str) -> list[float]:
        """``time.monotonic()`` of each received call of ``method``."""
        with self._lock:
            return list(self._times[method])

    def rejected(self) -> int:
        """Calls refused by the rate limit."""
        with self._lock:
            return self._rejected

    def reset_calls(self) -> None:
        with self._lock:
            self._calls.clear()
            self._rejected = 0
            for times in self._times.values():
                times.clear()

    # -- serving ------------------------------------------------------------------------------

    def _unary(self, method: str, request_type: type[Message]) -> grpc.RpcMethodHandler:
        def handle(request: Message, context: grpc.ServicerContext) -> bytes:
            with self._lock:
                delay = self._delays.get(method, 0.0)
            if delay:
                self._stopping.wait(delay)
            status, payload = self._answer(method, request)
            if status is not None:
                context.abort(*status)
            return payload

        # Responses are pre-serialised bytes, so serve_raw can send anything at all.
        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request_type.FromString, response_serializer=bytes
        )

    def _answer(self, method: str, request: Message) -> tuple[tuple[grpc.StatusCode, str] | None, bytes]:
        with self._lock:
            self._calls[method] += 1
            self._times[method].append(time.monotonic())
            if self._limiter is not None and not self._limiter.try_acquire():
                self._rejected += 1
                return (grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit"), b""
            if method in self._faults:
                return self._faults[method], b""
            if method in self._raw:
                return None, self._raw[method]
            if method == "List":
                return None, api_pb2.ListPodResourcesResponse(pod_resources=self._pods).SerializeToString()
            if method == "GetAllocatableResources":
                if self._allocatable is None:
                    return (
                        grpc.StatusCode.UNIMPLEMENTED,
                        f"unknown method {method} for service {SERVICE}",
                    ), b""
                return None, self._healthy(self._allocatable).SerializeToString()
            assert isinstance(request, api_pb2.GetPodResourcesRequest)
            for pod in self._pods:
                if (pod.namespace, pod.name) == (request.pod_namespace, request.pod_name):
                    return None, api_pb2.GetPodResourcesResponse(pod_resources=pod).SerializeToString()
            not_found = f"pod {request.pod_name} in namespace {request.pod_namespace} not found"
            return (grpc.StatusCode.UNKNOWN, not_found), b""

    def _healthy(
        self, allocatable: api_pb2.AllocatableResourcesResponse
    ) -> api_pb2.AllocatableResourcesResponse:
        if not self._unhealthy:
            return allocatable
        answer = _copy(allocatable)
        del answer.devices[:]
        for dev in allocatable.devices:
            ids = [i for i in dev.device_ids if (dev.resource_name, i) not in self._unhealthy]
            if ids:
                kept = answer.devices.add()
                kept.CopyFrom(dev)
                kept.device_ids[:] = ids
        return answer


_M = TypeVar("_M", bound=Message)


def _copy(message: _M) -> _M:
    clone = type(message)()
    clone.CopyFrom(message)
    return clone


def _check(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown podresources method {method!r}; expected one of {', '.join(METHODS)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.fake_kubelet",
        description="Serve a podresources scenario on a unix socket.",
    )
    parser.add_argument("--socket", required=True, help="unix socket path to listen on")
    parser.add_argument(
        "--scenario", required=True, help="directory with list.* and get_allocatable_resources.*"
    )
    parser.add_argument("--no-rate-limit", action="store_true", help="disable the kubelet's 100 QPS limit")
    args = parser.parse_args(argv)
    kubelet = FakeKubelet(
        args.socket, args.scenario, rate_limit=None if args.no_rate_limit else KUBELET_RATE_LIMIT
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with kubelet:
        print(f"fake kubelet: serving {args.scenario} on {kubelet.endpoint}", flush=True)
        done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
