"""Validate every manifest in deploy/ against the Kubernetes OpenAPI schemas, strictly.

The schemas come bundled in the ``kubernetes-validate`` wheel (the ``test`` extra): nothing is
downloaded. Unknown fields are errors (strict), and so is a kind with no schema: a typo in
``apiVersion`` must not pass as "unknown, skipped". Each manifest is checked against the oldest
Kubernetes the deployment supports and the newest the installed schemas know.

The Prometheus Operator's kinds (PodMonitor, ServiceMonitor, PrometheusRule: deploy/monitoring.yaml
and deploy/prometheus-rules.yaml) and cert-manager's (Issuer, Certificate:
deploy/scheduler-extender-certificates.yaml) are CRDs the bundled schemas do not know. They get a
structural schema of our own instead, as strict: only the fields of monitoring.coreos.com/v1 and
cert-manager.io/v1 that deploy/ uses or might plausibly use, with their types, and nothing else
(a misspelt field is an error).

Usage: ``python hack/check_manifests.py [FILE...]`` (default: every manifest under deploy/, see
manifests(); .ci/run also passes each overlay rendered by ``kubectl kustomize``); exit status 1 and
one line per problem when anything is invalid.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, latest_version

REPO = Path(__file__).resolve().parents[1]
OLDEST = "1.30.0"
"""ValidatingAdmissionPolicy v1 and the node-name claim of service account tokens both need 1.30."""


def _strict(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_STR = {"type": "string", "minLength": 1}
_STRINGS = {"type": "array", "items": _STR}
_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
# monitoring.coreos.com/v1 Duration: Prometheus durations, e.g. 30s, 1m30s, 5m.
_DURATION = {
    "type": "string",
    "pattern": "^(0|([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?)$",
}
_METADATA = _strict(
    {"name": _STR, "namespace": _STR, "labels": _MAP, "annotations": _MAP}, ("name", "namespace")
)
_SELECTOR = _strict(
    {
        "matchLabels": _MAP,
        "matchExpressions": {
            "type": "array",
            "items": _strict({"key": _STR, "operator": _STR, "values": _STRINGS}, ("key", "operator")),
        },
    }
)
_NAMESPACES = _strict({"any": {"type": "boolean"}, "matchNames": _STRINGS})
_RELABEL = {
    "type": "array",
    "items": _strict(
        {
            "sourceLabels": _STRINGS,
            "separator": {"type": "string"},
            "targetLabel": _STR,
            "regex": {"type": "string"},
            "modulus": {"type": "integer"},
            "replacement": {"type": "string"},
            "action": {
                "enum": [
                    "replace",
                    "keep",
                    "drop",
                    "keepequal",
                    "dropequal",
                    "hashmod",
                    "labelmap",
                    "labeldrop",
                    "labelkeep",
                    "lowercase",
                    "uppercase",
                ]
            },
        }
    ),
}
_ENDPOINT = {
    "port": _STR,
    "path": {"type": "string", "pattern": "^/"},
    "scheme": {"enum": ["http", "https"]},
    "interval": _DURATION,
    "scrapeTimeout": _DURATION,
    "honorLabels": {"type": "boolean"},
    "relabelings": _RELABEL,
    "metricRelabelings": _RELABEL,
}
_RULE = {
    **_strict(
        {
            "alert": _STR,
            "record": _STR,
            "expr": {"type": ["string", "integer"], "minLength": 1},
            "for": _DURATION,
            "keep_firing_for": _DURATION,
            "labels": _MAP,
            "annotations": _MAP,
        },
        ("expr",),
    ),
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
}


def _kind(
    spec: dict[str, Any], required: tuple[str, ...], api_version: str = "monitoring.coreos.com/v1"
) -> dict[str, Any]:
    return _strict(
        {
            "apiVersion": {"const": api_version},
            "kind": _STR,
            "metadata": _METADATA,
            "spec": spec,
        },
        ("apiVersion", "kind", "metadata", "spec", *required),
    )


OPERATOR_SCHEMAS: dict[str, dict[str, Any]] = {
    "PodMonitor": _kind(
        _strict(
            {
                "jobLabel": _STR,
                "podTargetLabels": _STRINGS,
                "selector": _SELECTOR,
                "namespaceSelector": _NAMESPACES,
                "podMetricsEndpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": _strict(_ENDPOINT, ("port",)),
                },
            },
            ("selector", "podMetricsEndpoints"),
        ),
        (),
    ),
    "ServiceMonitor": _kind(
        _strict(
            {
                "jobLabel": _STR,
                "targetLabels": _STRINGS,
                "podTargetLabels": _STRINGS,
                "selector": _SELECTOR,
                "namespaceSelector": _NAMESPACES,
                "endpoints": {"type": "array", "minItems": 1, "items": _strict(_ENDPOINT, ("port",))},
            },
            ("selector", "endpoints"),
        ),
        (),
    ),
    "PrometheusRule": _kind(
        _strict(
            {
                "groups": {
                    "type": "array",
                    "minItems": 1,
                    "items": _strict(
                        {
                            "name": _STR,
                            "interval": _DURATION,
                            "rules": {"type": "array", "minItems": 1, "items": _RULE},
                        },
                        ("name", "rules"),
                    ),
                }
            },
            ("groups",),
        ),
        (),
    ),
}
"""Structural schemas of the monitoring.coreos.com/v1 kinds deploy/ ships, by kind."""

_CERT_MANAGER = "cert-manager.io/v1"
_ISSUER_REF = _strict({"name": _STR, "kind": {"enum": ["Issuer", "ClusterIssuer"]}, "group": _STR}, ("name",))
_USAGES = {
    "type": "array",
    "items": {"enum": ["server auth", "client auth", "digital signature", "key encipherment", "cert sign"]},
}
CERT_MANAGER_SCHEMAS: dict[str, dict[str, Any]] = {
    "Issuer": _kind(
        {
            **_strict({"selfSigned": _strict({}), "ca": _strict({"secretName": _STR}, ("secretName",))}),
            "minProperties": 1,
            "maxProperties": 1,
        },
        (),
        _CERT_MANAGER,
    ),
    "Certificate": _kind(
        _strict(
            {
                "secretName": _STR,
                "commonName": _STR,
                "dnsNames": _STRINGS,
                "ipAddresses": _STRINGS,
                "isCA": {"type": "boolean"},
                "usages": _USAGES,
                "duration": {"type": "string", "pattern": "^([0-9]+(h|m|s))+$"},
                "renewBefore": {"type": "string", "pattern": "^([0-9]+(h|m|s))+$"},
                "privateKey": _strict(
                    {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "size": {"type": "integer"},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                    }
                ),
                "issuerRef": _ISSUER_REF,
            },
            ("secretName", "issuerRef"),
        ),
        (),
        _CERT_MANAGER,
    ),
}
"""Structural schemas of the cert-manager.io/v1 kinds deploy/ ships, by kind."""


def operator_problems(doc: dict[str, Any], where: str) -> list[str]:
    """Violations of :data:`OPERATOR_SCHEMAS` or :data:`CERT_MANAGER_SCHEMAS`."""
    if doc.get("apiVersion") == _CERT_MANAGER:
        schema = CERT_MANAGER_SCHEMAS.get(str(doc.get("kind")))
    else:
        schema = OPERATOR_SCHEMAS.get(str(doc.get("kind")))
    if schema is None or doc.get("apiVersion") not in ("monitoring.coreos.com/v1", _CERT_MANAGER):
        return [f"{where}: no schema for {doc.get('apiVersion')} {doc.get('kind')}"]
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{where}: {'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def problems(path: Path, versions: list[str]) -> list[str]:
    """Every schema violation in ``path``, one line each (empty when valid)."""
    out: list[str] = []
    for index, doc in enumerate(documents(path)):
        name = doc.get("metadata", {}).get("name", f"document {index}")
        where = f"{path.name}: {doc.get('kind')}/{name}"
        if str(doc.get("apiVersion", "")).startswith(("monitoring.coreos.com/", "cert-manager.io/")):
            out.extend(operator_problems(doc, where))
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except SchemaNotFoundError:
                out.append(
                    f"{where}: no Kubernetes {version} schema for {doc.get('apiVersion')} {doc.get('kind')}"
                )
            except kubernetes_validate.ValidationError as e:
                field = ".".join(str(p) for p in e.path) or "(top level)"
                out.append(f"{where}: Kubernetes {version}: {field}: {e.message}")
    return out


def manifests() -> list[Path]:
    """The manifests under deploy/: the bases' files, not kustomization.yaml files (kustomize's
    input, checked by rendering the overlays) nor the deploy/*.yaml links to the bases' files."""
    return sorted(
        p for p in (REPO / "deploy").rglob("*.yaml") if p.name != "kustomization.yaml" and not p.is_symlink()
    )


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or manifests()
    if not paths:
        print("check-manifests: no manifests found")
        return 1
    versions = [OLDEST, str(latest_version())]
    found = [line for path in paths for line in problems(path, versions)]
    for line in found:
        print(f"check-manifests: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
