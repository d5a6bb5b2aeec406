"""The resources the double serves, and the per-resource rules of the real apiserver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .schema import Crd, Validator


@dataclass(frozen=True)
class ResourceDef:
    group: str
    versions: tuple[str, ...]
    plural: str
    singular: str
    kind: str
    namespaced: bool
    # Objects are kept once, at this version; other versions only rewrite apiVersion.
    storage_version: str = "v1"
    short_names: tuple[str, ...] = ()
    # Custom resources: apiVersion/kind required in bodies, schema validation and pruning,
    # generation bumps, and no strategic merge patch.
    custom: bool = False
    validators: Mapping[str, Validator] = field(default_factory=dict)
    # Served only while this CRD is installed.
    needs_crd: str | None = None
    allow_create_on_update: bool = False
    # DELETE answers with the deleted object (pods, custom resources) rather than a Status.
    return_deleted_object: bool = False
    # Fields a fieldSelector may use; metadata.name/namespace always work.
    selectable_fields: frozenset[str] = frozenset()
    # MicroTime fields, normalised to RFC 3339 with microseconds in UTC like the apiserver does.
    micro_time_fields: tuple[tuple[str, ...], ...] = ()
    # Served for reads only (the test controls these objects).
    read_only: bool = False

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def storage_api_version(self) -> str:
        return self.api_version(self.storage_version)

    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def custom_resource(crd: Crd) -> ResourceDef:
    return ResourceDef(
        group=crd.group,
        versions=crd.versions,
        plural=crd.plural,
        singular=crd.singular,
        kind=crd.kind,
        namespaced=crd.namespaced,
        storage_version=crd.storage_version,
        short_names=crd.short_names,
        custom=True,
        validators={v: Validator(s) for v, s in crd.schemas.items()},
        needs_crd=crd.name,
        return_deleted_object=True,
    )


CRDS = ResourceDef(
    group="apiextensions.k8s.io",
    versions=("v1",),
    plural="customresourcedefinitions",
    singular="customresourcedefinition",
    kind="CustomResourceDefinition",
    namespaced=False,
    short_names=("crd", "crds"),
    return_deleted_object=True,
    read_only=True,
)

NODES = ResourceDef(
    group="",
    versions=("v1",),
    plural="nodes",
    singular="node",
    kind="Node",
    namespaced=False,
    short_names=("no",),
    return_deleted_object=True,
    selectable_fields=frozenset({"spec.unschedulable"}),
)

PODS = ResourceDef(
    group="",
    versions=("v1",),
    plural="pods",
    singular="pod",
    kind="Pod",
    namespaced=True,
    short_names=("po",),
    return_deleted_object=True,
    selectable_fields=frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
)

LEASES = ResourceDef(
    group="coordination.k8s.io",
    versions=("v1",),
    plural="leases",
    singular="lease",
    kind="Lease",
    namespaced=True,
    allow_create_on_update=True,
    micro_time_fields=(("spec", "acquireTime"), ("spec", "renewTime")),
)

ENDPOINT_SLICES = ResourceDef(
    group="discovery.k8s.io",
    versions=("v1",),
    plural="endpointslices",
    singular="endpointslice",
    kind="EndpointSlice",
    namespaced=True,
)

POD_DISRUPTION_BUDGETS = ResourceDef(
    group="policy",
    versions=("v1",),
    plural="poddisruptionbudgets",
    singular="poddisruptionbudget",
    kind="PodDisruptionBudget",
    namespaced=True,
    short_names=("pdb",),
)

BUILTIN = (CRDS, NODES, PODS, LEASES, ENDPOINT_SLICES, POD_DISRUPTION_BUDGETS)
