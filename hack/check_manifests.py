"""Validate every manifest in deploy/ against the Kubernetes OpenAPI schemas, strictly.

The schemas come bundled in the ``kubernetes-validate`` wheel (the ``test`` extra): nothing is
downloaded. Unknown fields are errors (strict), and so is a kind with no schema: a typo in
``apiVersion`` must not pass as "unknown, skipped". Each manifest is checked against the oldest
Kubernetes the deployment supports and the newest the installed schemas know.

Usage: ``python hack/check_manifests.py [FILE...]`` (default: deploy/*.yaml); exit status 1 and
one line per problem when anything is invalid.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, latest_version

REPO = Path(__file__).resolve().parents[1]
OLDEST = "1.30.0"
"""ValidatingAdmissionPolicy v1 and the node-name claim of service account tokens both need 1.30."""


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def problems(path: Path, versions: list[str]) -> list[str]:
    """Every schema violation in ``path``, one line each (empty when valid)."""
    out: list[str] = []
    for index, doc in enumerate(documents(path)):
        name = doc.get("metadata", {}).get("name", f"document {index}")
        where = f"{path.name}: {doc.get('kind')}/{name}"
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


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((REPO / "deploy").glob("*.yaml"))
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
