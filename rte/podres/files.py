"""A podresources backend reading a scenario directory instead of the kubelet socket.

Layout (the one of the fixtures and of rte.testing.fake_kubelet): ``list``,
``get_allocatable_resources`` and optionally ``get``, each as ``<stem>.pb`` (protobuf wire bytes),
``<stem>.protojson.json``, ``<stem>.gojson.json`` or ``<stem>.json`` (either JSON style). Files are
re-read on every call, so edits show up on the next cycle, as with a live kubelet.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from rte.errors import InputError, NotSupportedError
from rte.podres import convert
from rte.podres.types import AllocatableResources, PodResources

if TYPE_CHECKING:
    from google.protobuf.message import Message

_M = TypeVar("_M", bound="Message")

Encoding = Literal["pb", "protojson", "gojson", "json"]
# When several encodings of a response are present, the first one here wins.
SUFFIXES: dict[Encoding, str] = {
    "pb": ".pb",
    "protojson": ".protojson.json",
    "gojson": ".gojson.json",
    "json": ".json",
}


class PodResourcesFiles:
    """The podresources calls over a scenario directory (behind
    :class:`~rte.podres.reader.DirectoryReader`, the kubelet reader the agent uses).

    ``encoding`` restricts reading to one file kind; by default the first present one is used.
    """

    def __init__(self, directory: str | Path, encoding: Encoding | None = None) -> None:
        self.directory = Path(directory)
        self.encoding = encoding

    def list(self) -> tuple[PodResources, ...]:
        path = self._find("list")
        if path is None:
            raise InputError(str(self.directory / "list.*"), self._missing("list"))
        if path.suffix == ".pb":
            from rte.podres.v1 import api_pb2

            return convert.list_from_proto(_decode(path, api_pb2.ListPodResourcesResponse), str(path))
        return convert.list_from_json(_load_json(path), str(path))

    def get_allocatable(self) -> AllocatableResources:
        path = self._find("get_allocatable_resources")
        if path is None:
            # Like a kubelet without GetAllocatableResources: callers degrade rather than fail.
            raise NotSupportedError(f"{self.directory}: {self._missing('get_allocatable_resources')}")
        if path.suffix == ".pb":
            from rte.podres.v1 import api_pb2

            msg = _decode(path, api_pb2.AllocatableResourcesResponse)
            return convert.allocatable_from_proto(msg, str(path))
        return convert.allocatable_from_json(_load_json(path), str(path))

    def get(self, namespace: str, name: str) -> PodResources | None:
        """The ``get`` file's pod if it is the one asked for, else the pod from ``list``."""
        path = self._find("get")
        if path is not None:
            if path.suffix == ".pb":
                from rte.podres.v1 import api_pb2

                pod = convert.get_from_proto(_decode(path, api_pb2.GetPodResourcesResponse), str(path))
            else:
                pod = convert.get_from_json(_load_json(path), str(path))
            if pod is not None and (pod.namespace, pod.name) == (namespace, name):
                return pod
        return next((p for p in self.list() if (p.namespace, p.name) == (namespace, name)), None)

    def _find(self, stem: str) -> Path | None:
        kinds = [self.encoding] if self.encoding else list(SUFFIXES)
        for kind in kinds:
            path = self.directory / f"{stem}{SUFFIXES[kind]}"
            if path.is_file():
                return path
        return None

    def _missing(self, stem: str) -> str:
        kinds = [self.encoding] if self.encoding else list(SUFFIXES)
        return "no " + " or ".join(f"{stem}{SUFFIXES[k]}" for k in kinds) + " file"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from e


def _load_json(path: Path) -> object:
    return convert.parse_json(_read(path), str(path))


def _decode(path: Path, message_type: type[_M]) -> _M:
    from google.protobuf.message import DecodeError

    try:
        return message_type.FromString(_read(path))
    except DecodeError as e:
        raise InputError(str(path), f"not a valid {message_type.__name__}: {e}") from e
