"""Kubernetes REST semantics over :class:`Storage`: get, list, create, update, patch, delete, watch.

Each method takes a parsed :class:`~.request.Request` and returns a :class:`~.request.Response`
or raises :class:`ApiError`. Nothing here knows about sockets; ``http.py`` does the wire, and
``admission.py`` checks the bodies of writes.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from . import status
from .admission import admit, check_type_meta, decode, prune
from .fieldmanager import ApplyConflict, ManagedFields
from .patch import PatchError, json_patch, merge_patch
from .request import (
    APPLY_PATCH,
    JSON_PATCH,
    PATCH_TYPES_BUILTIN,
    PATCH_TYPES_CUSTOM,
    Request,
    Response,
    WatchPlan,
    default_manager,
    fmt_time,
    now_time,
    rv_param,
)
from .resources import ResourceDef
from .selectors import combined, field_selector, label_selector
from .status import ApiError
from .storage import Obj, Storage, Watcher


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
        rv_param(req.query.get("resourceVersion"))
        matches = self._selector(req)
        store = self.storage
        with store.lock:
            list_rv = store.rv
            start: tuple[str, str] | None = None
            token = req.query.get("continue")
            if token:
                list_rv, start = self._decode_continue(token)
            try:
                limit = int(req.query.get("limit") or 0)
            except ValueError:
                raise status.bad_request(f"limit: Invalid value: {req.query['limit']!r}") from None
            # Selectors only read, so they see the stored objects; only the page is copied.
            keys = [
                k
                for k in store.keys_after(res.plural, start)
                if (not req.namespace or k[0] == req.namespace) and matches(store.peek(res.plural, k))
            ]
            meta: Obj = {"resourceVersion": str(list_rv)}
            if 0 < limit < len(keys):
                meta["continue"] = self._encode_continue(list_rv, keys[limit - 1])
                meta["remainingItemCount"] = len(keys) - limit
                keys = keys[:limit]
            variant = f"{res.api_version(req.version)} {res.custom}"
            shown = functools.partial(self._shown, res, req.version)
            items = [store.encoded(res.plural, k, variant, shown) for k in keys]
        head: Obj = {"apiVersion": res.api_version(req.version), "kind": res.list_kind, "metadata": meta}
        # The bytes json.dumps gives for head plus "items", each item encoded once (Storage.encoded).
        body = json.dumps(head).encode()[:-1] + b', "items": [' + b", ".join(items) + b"]}"
        return Response(200, body)

    def _shown(self, res: ResourceDef, version: str, obj: Obj) -> Obj:
        """A list item (``obj`` a copy): typed lists of built-in kinds carry kind/apiVersion only
        on the list itself."""
        obj["apiVersion"] = res.api_version(version)
        obj["kind"] = res.kind
        if not res.custom:
            del obj["apiVersion"], obj["kind"]
        return obj

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

    def _manager(self, req: Request) -> str:
        return req.query.get("fieldManager") or default_manager(req.user_agent)

    # -- writes --------------------------------------------------------------------------------

    def create(self, req: Request) -> Response:
        warnings: list[str] = []
        body = decode(req)
        if isinstance(body, dict):
            meta = body.setdefault("metadata", {})
            if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
                meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        obj = admit(req, body, warnings)
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
        body = decode(req)
        if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            body_name = body["metadata"].get("name")
            if body_name and body_name != req.name:
                raise status.bad_request(
                    f"the name of the object ({body_name}) does not match the name on the URL ({req.name})"
                )
            body["metadata"].setdefault("name", req.name)
        obj = admit(req, body, warnings)
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
        patch = decode(req, accepted=tuple(accepted))
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
            obj = admit(req, patched, warnings)
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
        config = check_type_meta(req, body)
        self._check_same_name(req, config)
        # An apply configuration may be partial, so only the merged result is validated; fields
        # the schema does not declare are an error here, as in the real field manager.
        dropped: list[str] = []
        prune(req, config, dropped, "Warn")
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
            obj = admit(req, merged, warnings)
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
            options = decode(req)
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
        since = rv_param(req.query.get("resourceVersion"))
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
