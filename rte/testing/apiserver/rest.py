"""Kubernetes REST semantics over :class:`Storage`: get, list, create, update, patch, delete, watch.

Each method takes a parsed :class:`Request` and returns a :class:`Response` or raises
:class:`ApiError`. Nothing here knows about sockets; ``http.py`` does the wire.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from . import status
from .fieldmanager import ApplyConflict, ManagedFields
from .patch import PatchError, json_patch, merge_patch
from .resources import ResourceDef
from .schema import name_causes
from .selectors import combined, field_selector, label_selector
from .status import ApiError
from .storage import Key, Obj, Storage, Watcher

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
    body: Obj
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


def _rv_param(value: str | None, what: str = "resourceVersion") -> int | None:
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


class Rest:
    def __init__(
        self,
        storage: Storage,
        clock: Callable[[], datetime] = now_time,
        after_delete: Callable[[ResourceDef, Obj], None] | None = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.after_delete = after_delete

    # -- representation ------------------------------------------------------------------------

    @staticmethod
    def out(res: ResourceDef, version: str, obj: Obj) -> Obj:
        """The stored object as seen through ``version``: only apiVersion differs."""
        shown = copy.deepcopy(obj)
        shown["apiVersion"] = res.api_version(version)
        shown["kind"] = res.kind
        return shown

    def _missing(self, req: Request) -> ApiError:
        return status.not_found(req.resource.plural, req.resource.group, req.name or "")

    # -- reads ---------------------------------------------------------------------------------

    def get(self, req: Request) -> Response:
        obj = self.storage.get(req.resource.plural, req.key)
        if obj is None:
            raise self._missing(req)
        return Response(200, self.out(req.resource, req.version, obj))

    def _selector(self, req: Request) -> Callable[[Obj], bool]:
        fields = req.query.get("fieldSelector")
        labels = req.query.get("labelSelector")
        return combined(
            field_selector(fields, req.resource.selectable_fields) if fields else None,
            label_selector(labels) if labels else None,
        )

    def list_items(self, req: Request) -> Response:
        res = req.resource
        _rv_param(req.query.get("resourceVersion"))
        matches = self._selector(req)
        start: tuple[str, str] | None = None
        with self.storage.lock:
            list_rv = self.storage.rv
            token = req.query.get("continue")
            if token:
                list_rv, start = self._decode_continue(token)
            items = [o for o in self.storage.items(res.plural, req.namespace) if matches(o)]
        if start is not None:
            items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start]
        meta: Obj = {"resourceVersion": str(list_rv)}
        try:
            limit = int(req.query.get("limit") or 0)
        except ValueError:
            raise status.bad_request(f"limit: Invalid value: {req.query['limit']!r}") from None
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            meta["continue"] = self._encode_continue(list_rv, (last.get("namespace", ""), last["name"]))
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        shown = [self.out(res, req.version, o) for o in items]
        if not res.custom:
            # Typed lists of built-in kinds carry kind/apiVersion only on the list itself.
            for item in shown:
                del item["apiVersion"], item["kind"]
        body: Obj = {"apiVersion": res.api_version(req.version), "kind": res.list_kind, "metadata": meta}
        body["items"] = shown
        return Response(200, body)

    @staticmethod
    def _encode_continue(rv: int, start: tuple[str, str]) -> str:
        raw = json.dumps({"rv": rv, "start": list(start)}).encode()
        return base64.urlsafe_b64encode(raw).decode()

    def _decode_continue(self, token: str) -> tuple[int, tuple[str, str]]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            rv, start = int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
        except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
            raise status.bad_request("continue key is not valid: malformed token") from None
        if rv < self.storage.compacted:
            raise ApiError(
                410,
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter.",
                reason="Expired",
            )
        return rv, start

    # -- body admission ------------------------------------------------------------------------

    def _decode(self, req: Request, accepted: tuple[str, ...] = (JSON, YAML)) -> Any:
        ctype = req.content_type or JSON
        if ctype not in accepted:
            raise status.unsupported_media_type(ctype, list(accepted))
        try:
            if ctype in (YAML, APPLY_PATCH):
                return yaml.safe_load(req.body.decode() or "null")
            return json.loads(req.body or b"null")
        except (ValueError, yaml.YAMLError) as e:
            raise status.bad_request(f"the body of the request could not be decoded: {e}") from None

    def _check_type_meta(self, req: Request, obj: Any) -> Obj:
        """apiVersion and kind must match the URL (custom resources must carry them)."""
        res = req.resource
        if not isinstance(obj, dict):
            raise status.bad_request(f"the body of the request must be a {res.kind} object")
        for field_name, label, want in (
            ("apiVersion", "API version", res.api_version(req.version)),
            ("kind", "kind", res.kind),
        ):
            got = obj.get(field_name)
            if got in (None, ""):
                if res.custom:
                    raise status.bad_request(f"Object '{field_name}' is missing in the request body")
            elif got != want:
                raise status.bad_request(
                    f"the {label} in the data ({got}) does not match the expected {label} ({want})"
                )
        meta = obj.get("metadata", {})
        if not isinstance(meta, dict):
            raise status.bad_request("metadata: must be an object")
        return {**obj, "metadata": dict(meta)}

    def _prune(self, req: Request, obj: Obj, warnings: list[str], mode: str) -> Obj:
        """Drop undeclared fields; warn, ignore or refuse them per ``fieldValidation``."""
        if not req.resource.custom:
            return obj
        pruned, dropped = req.resource.validators[req.version].prune(obj)
        if dropped and mode == "Strict":
            listed = ", ".join(f'unknown field "{d}"' for d in dropped)
            raise status.bad_request(f"strict decoding error: {listed}")
        if mode != "Ignore":
            warnings.extend(f'unknown field "{d}"' for d in dropped)
        return pruned

    def _admit(self, req: Request, body: Any, warnings: list[str]) -> Obj:
        """Type-check, default, prune and validate a body; the result is in storage form."""
        res = req.resource
        obj = self._check_type_meta(req, body)
        obj = self._prune(req, obj, warnings, req.query.get("fieldValidation", "Warn"))
        meta = obj["metadata"]
        for map_name in ("labels", "annotations"):
            value = meta.get(map_name)
            if value is not None and not (
                isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
            ):
                raise status.bad_request(f"metadata.{map_name}: must be a map of string to string")
        if res.namespaced:
            ns = meta.get("namespace") or req.namespace
            if ns != req.namespace:
                raise status.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if meta.get("name"):
            causes = name_causes(meta["name"])
        else:
            causes = [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: name or generateName is required",
                    "field": "metadata.name",
                }
            ]
        if res.custom:
            causes += res.validators[req.version].causes(obj)
        causes += self._builtin_causes(res, obj)
        if causes:
            raise status.invalid(res.kind, res.group, meta.get("name", ""), causes)
        self._normalise_times(res, obj)
        obj["apiVersion"], obj["kind"] = res.storage_api_version, res.kind
        return obj

    @staticmethod
    def _builtin_causes(res: ResourceDef, obj: Obj) -> list[dict[str, str]]:
        if res.plural != "leases":
            return []
        duration = obj.get("spec", {}).get("leaseDurationSeconds")
        if duration is not None and (not isinstance(duration, int) or duration <= 0):
            return [
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {duration}: must be greater than 0",
                    "field": "spec.leaseDurationSeconds",
                }
            ]
        return []

    @staticmethod
    def _normalise_times(res: ResourceDef, obj: Obj) -> None:
        for path in res.micro_time_fields:
            node: Any = obj
            for part in path[:-1]:
                node = node.get(part) if isinstance(node, dict) else None
            if not isinstance(node, dict) or node.get(path[-1]) is None:
                continue
            raw = node[path[-1]]
            try:
                parsed = datetime.fromisoformat(str(raw))
            except ValueError:
                raise status.bad_request(
                    f'{".".join(path)}: parsing time "{raw}": not an RFC 3339 timestamp'
                ) from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            node[path[-1]] = fmt_micro_time(parsed.astimezone(UTC))

    def _manager(self, req: Request) -> str:
        return req.query.get("fieldManager") or default_manager(req.user_agent)

    # -- writes --------------------------------------------------------------------------------

    def create(self, req: Request) -> Response:
        warnings: list[str] = []
        body = self._decode(req)
        if isinstance(body, dict):
            meta = body.setdefault("metadata", {})
            if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
                meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        obj = self._admit(req, body, warnings)
        with self.storage.lock:
            return self._create(req, obj, warnings, managed=None)

    def _create(self, req: Request, obj: Obj, warnings: list[str], managed: ManagedFields | None) -> Response:
        res = req.resource
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            # The storage layer's plain error: a 500 without a reason, also for an apply that creates.
            raise ApiError(500, "resourceVersion should not be set on objects to be created", reason="")
        key = (meta.get("namespace", ""), meta["name"])
        if self.storage.get(res.plural, key) is not None:
            raise status.already_exists(res.plural, res.group, meta["name"])
        now = self.clock()
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = fmt_time(now)
        for server_owned in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(server_owned, None)
        if res.custom:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if managed is None:
            managed = ManagedFields(None)
            managed.record_update(self._manager(req), res.api_version(req.version), None, obj, fmt_time(now))
        meta["managedFields"] = managed.entries()
        if req.dry_run:
            meta["resourceVersion"] = str(self.storage.rv)
            return Response(201, self.out(res, req.version, obj), warnings=warnings)
        stored = self.storage.create(res.plural, obj)
        return Response(201, self.out(res, req.version, stored), changed=True, warnings=warnings)

    def update(self, req: Request) -> Response:
        warnings: list[str] = []
        body = self._decode(req)
        if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            body_name = body["metadata"].get("name")
            if body_name and body_name != req.name:
                raise status.bad_request(
                    f"the name of the object ({body_name}) does not match the name on the URL ({req.name})"
                )
            body["metadata"].setdefault("name", req.name)
        obj = self._admit(req, body, warnings)
        with self.storage.lock:
            current = self.storage.get(req.resource.plural, req.key)
            if current is None:
                if not req.resource.allow_create_on_update:
                    raise self._missing(req)
                obj["metadata"].pop("resourceVersion", None)
                return self._create(req, obj, warnings, managed=None)
            return self._update(req, current, obj, warnings, managed=None)

    def _update(
        self, req: Request, current: Obj, obj: Obj, warnings: list[str], managed: ManagedFields | None
    ) -> Response:
        res = req.resource
        cur_meta, meta = current["metadata"], obj["metadata"]
        name = cur_meta["name"]
        if meta.get("resourceVersion") and meta["resourceVersion"] != cur_meta["resourceVersion"]:
            raise status.conflict(res.plural, res.group, name)
        if meta.get("uid") and meta["uid"] != cur_meta["uid"]:
            raise status.conflict(
                res.plural,
                res.group,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, "
                f"UID in object meta: {cur_meta['uid']}",
            )
        # Fields the server owns come from the stored object, whatever the body says.
        for server_owned in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if server_owned in cur_meta:
                meta[server_owned] = cur_meta[server_owned]
            else:
                meta.pop(server_owned, None)
        meta.pop("selfLink", None)
        if res.custom:
            content_changed = {k: v for k, v in obj.items() if k != "metadata"} != {
                k: v for k, v in current.items() if k != "metadata"
            }
            meta["generation"] = cur_meta.get("generation", 1) + (1 if content_changed else 0)
        now = fmt_time(self.clock())
        if managed is None:
            managed = ManagedFields(cur_meta.get("managedFields"))
            managed.record_update(self._manager(req), res.api_version(req.version), current, obj, now)
        meta["managedFields"] = managed.entries()
        meta["resourceVersion"] = cur_meta["resourceVersion"]
        if req.dry_run:
            return Response(200, self.out(res, req.version, obj), warnings=warnings)
        stored, changed = self.storage.update(res.plural, obj)
        return Response(200, self.out(res, req.version, stored), changed=changed, warnings=warnings)

    def patch(self, req: Request) -> Response:
        res = req.resource
        accepted = PATCH_TYPES_CUSTOM if res.custom else PATCH_TYPES_BUILTIN
        if req.content_type not in accepted:
            raise status.unsupported_media_type(req.content_type, accepted)
        patch = self._decode(req, accepted=tuple(accepted))
        if req.content_type == APPLY_PATCH:
            return self._apply(req, patch)
        warnings: list[str] = []
        with self.storage.lock:
            current = self.storage.get(res.plural, req.key)
            if current is None:
                raise self._missing(req)
            base = self.out(res, req.version, current)
            try:
                if req.content_type == JSON_PATCH:
                    patched = json_patch(base, patch)
                else:
                    if not isinstance(patch, dict):
                        raise status.bad_request("a merge patch must be a JSON object")
                    patched = merge_patch(base, patch)
            except PatchError as e:
                raise ApiError(422, str(e), details={}) from None
            self._check_same_name(req, patched)
            obj = self._admit(req, patched, warnings)
            return self._update(req, current, obj, warnings, managed=None)

    def _check_same_name(self, req: Request, obj: Any) -> None:
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            got = obj["metadata"].get("name")
            if got != req.name:
                raise status.bad_request(
                    f"the name of the object ({got}) does not match the name on the URL ({req.name})"
                )

    def _apply(self, req: Request, body: Any) -> Response:
        """Server-side apply, simplified as described in ``fieldmanager``."""
        res = req.resource
        manager = req.query.get("fieldManager")
        if not manager:
            raise status.bad_request("PATCH: fieldManager is required for apply requests")
        config = self._check_type_meta(req, body)
        self._check_same_name(req, config)
        # An apply configuration may be partial, so only the merged result is validated; fields
        # the schema does not declare are an error here, as in the real field manager.
        dropped: list[str] = []
        self._prune(req, config, dropped, "Warn")
        if dropped:
            listed = ", ".join(d.removeprefix("unknown field ") for d in dropped)
            raise status.bad_request(
                f"failed to create typed patch object: {listed}: field not declared in schema"
            )
        api_version = res.api_version(req.version)
        now = fmt_time(self.clock())
        with self.storage.lock:
            current = self.storage.get(res.plural, req.key)
            managed = ManagedFields(current["metadata"].get("managedFields") if current else None)
            base = self.out(res, req.version, current) if current else {}
            try:
                merged = managed.apply(manager, api_version, base, config, req.flag("force"), now)
            except ApplyConflict as e:
                raise self._apply_conflict(req, api_version, e) from None
            merged["apiVersion"], merged["kind"] = api_version, res.kind
            merged_meta = merged.setdefault("metadata", {})
            merged_meta["name"] = req.name
            if req.namespace:
                merged_meta["namespace"] = req.namespace
            # A resourceVersion in the configuration is a precondition, as for update.
            want_rv = config["metadata"].get("resourceVersion")
            merged_meta.pop("resourceVersion", None)
            if want_rv:
                merged_meta["resourceVersion"] = want_rv
            warnings: list[str] = []
            obj = self._admit(req, merged, warnings)
            if current is None:
                return self._create(req, obj, warnings, managed=managed)
            return self._update(req, current, obj, warnings, managed=managed)

    @staticmethod
    def _apply_conflict(req: Request, api_version: str, e: ApplyConflict) -> ApiError:
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f'conflict with "{manager}" using {api_version}',
                "field": "." + ".".join(path),
            }
            for manager, path in e.conflicts
        ]
        listed = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
        return ApiError(
            409,
            f"Apply failed with {len(causes)} conflict{'s' if len(causes) > 1 else ''}: {listed}",
            reason="Conflict",
            details={
                "name": req.name,
                "group": req.resource.group,
                "kind": req.resource.plural,
                "causes": causes,
            },
        )

    def delete(self, req: Request) -> Response:
        res = req.resource
        options: Any = {}
        if req.body.strip():
            options = self._decode(req)
        preconditions: Obj = {}
        if isinstance(options, dict) and isinstance(options.get("preconditions"), dict):
            preconditions = options["preconditions"]
        with self.storage.lock:
            current = self.storage.get(res.plural, req.key)
            if current is None:
                raise self._missing(req)
            meta = current["metadata"]
            for field_name in ("uid", "resourceVersion"):
                want = preconditions.get(field_name)
                if want and want != meta.get(field_name):
                    label = "UID" if field_name == "uid" else "ResourceVersion"
                    raise status.conflict(
                        res.plural,
                        res.group,
                        meta["name"],
                        f"Precondition failed: {label} in precondition: {want}, "
                        f"{label} in object meta: {meta.get(field_name)}",
                    )
            if req.dry_run:
                final, changed = current, False
            else:
                final, changed = self.storage.delete(res.plural, req.key), True
        if changed and self.after_delete is not None:
            self.after_delete(res, final)
        if res.return_deleted_object:
            return Response(200, self.out(res, req.version, final), changed=changed)
        details = {"name": meta["name"], "group": res.group, "kind": res.plural, "uid": meta["uid"]}
        return Response(200, status.success_status(details), changed=changed)

    # -- watch ---------------------------------------------------------------------------------

    def watch(self, req: Request) -> WatchPlan:
        """Register a watch; the HTTP layer streams ``initial`` then the watcher's queue."""
        since = _rv_param(req.query.get("resourceVersion"))
        matches = self._selector(req)
        timeout = req.query.get("timeoutSeconds")
        watcher = Watcher(req.resource.plural, req.namespace, matches)
        plan = WatchPlan(
            watcher=watcher,
            version=req.version,
            initial=[],
            bookmarks=req.flag("allowWatchBookmarks"),
            initial_events_end=req.flag("sendInitialEvents") and req.flag("allowWatchBookmarks"),
            timeout=float(timeout) if timeout else None,
        )
        if req.flag("sendInitialEvents"):
            since = None
        with self.storage.lock:
            if since is not None and since < self.storage.compacted:
                # The apiserver answers 200 and puts the 410 in an ERROR event.
                plan.error = status.expired(since, self.storage.compacted)
                return plan
            plan.initial = self.storage.subscribe(watcher, since)
        return plan

    def bookmark(self, res: ResourceDef, version: str, initial_events_end: bool = False) -> Obj:
        meta: Obj = {"resourceVersion": str(self.storage.rv)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {"kind": res.kind, "apiVersion": res.api_version(version), "metadata": meta}
