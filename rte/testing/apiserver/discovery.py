"""/version, health checks and the discovery documents (/api, /apis, /apis/{group}/{version}).

The typed clients do not need discovery, but dynamic clients and kubectl start there, and a
custom resource must disappear from it while its CRD is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .resources import ResourceDef

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-rte-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resource_entry(res: ResourceDef) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": res.plural,
        "singularName": res.singular,
        "namespaced": res.namespaced,
        "kind": res.kind,
        "verbs": ["get", "list", "watch"] if res.read_only else _ALL_VERBS,
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    return entry


def _group(group: str, resources: list[ResourceDef]) -> dict[str, Any]:
    versions = sorted({v for r in resources for v in r.versions})
    preferred = resources[0].storage_version
    return {
        "name": group,
        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred},
    }


def document(served_resources: Callable[[], list[ResourceDef]], parts: list[str]) -> Any:
    """The answer for a discovery or health path, or None if ``parts`` is not one
    (``served_resources``: the server's, asked only for a discovery path)."""
    if parts in (["healthz"], ["livez"], ["readyz"]):
        return "ok"
    if parts == ["version"]:
        return VERSION_INFO
    served = served_resources()
    if parts == ["api"]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if parts == ["api", "v1"]:
        return {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [_resource_entry(r) for r in served if r.group == ""],
        }
    groups: dict[str, list[ResourceDef]] = {}
    for res in served:
        if res.group:
            groups.setdefault(res.group, []).append(res)
    if parts == ["apis"]:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(g, rs) for g, rs in sorted(groups.items())],
        }
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
        return {"kind": "APIGroup", "apiVersion": "v1", **_group(parts[1], groups[parts[1]])}
    if len(parts) == 3 and parts[0] == "apis" and parts[1] in groups:
        in_version = [r for r in groups[parts[1]] if parts[2] in r.versions]
        if in_version:
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{parts[1]}/{parts[2]}",
                "resources": [_resource_entry(r) for r in in_version],
            }
    return None
