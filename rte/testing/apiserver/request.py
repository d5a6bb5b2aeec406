"""What the REST layer exchanges with the HTTP layer: media types, requests, responses, watch plans."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from . import status
from .resources import ResourceDef
from .status import ApiError
from .storage import Key, Obj, Watcher

JSON = "application/json"
YAML = "application/yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# What PATCH accepts, as the apiserver lists it in a 415; custom resources lack strategic merge.
PATCH_TYPES_CUSTOM = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
PATCH_TYPES_BUILTIN = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]


@dataclass
class Request:
    method: str
    resource: ResourceDef
    version: str
    namespace: str | None
    name: str | None
    query: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    user_agent: str = ""

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    @property
    def key(self) -> Key:
        return (self.namespace or "", self.name or "")


@dataclass
class Response:
    code: int
    body: Obj | bytes
    """An object to encode, or JSON already encoded (lists)."""
    changed: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class WatchPlan:
    watcher: Watcher
    version: str
    initial: list[tuple[str, Obj]]
    bookmarks: bool
    initial_events_end: bool
    timeout: float | None
    error: ApiError | None = None


def now_time() -> datetime:
    return datetime.now(UTC)


def fmt_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_micro_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def default_manager(user_agent: str) -> str:
    # The apiserver names an unnamed manager after the client's user agent, up to the first "/".
    return user_agent.split("/", 1)[0] or "unknown"


def rv_param(value: str | None, what: str = "resourceVersion") -> int | None:
    if value in (None, "", "0"):
        return None
    try:
        parsed = int(value)
    except ValueError:
        raise status.bad_request(
            f'{what}: Invalid value: "{value}": must be a non-negative integer'
        ) from None
    if parsed < 0:
        raise status.bad_request(f'{what}: Invalid value: "{value}": must be a non-negative integer')
    return parsed
