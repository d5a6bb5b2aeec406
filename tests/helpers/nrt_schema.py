"""Validate objects against the OpenAPI v3 schema of the NRT CRD shipped in deploy/."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import yaml

from tests.helpers.paths import DEPLOY

CRD_PATH = DEPLOY / "crd-noderesourcetopologies.yaml"


@cache
def _schema(version: str) -> dict[str, Any]:
    crd = yaml.safe_load(CRD_PATH.read_text())
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return dict(v["schema"]["openAPIV3Schema"])
    raise KeyError(version)


def schema_errors(obj: dict[str, Any], version: str = "v1alpha2") -> list[str]:
    """Every schema violation of ``obj`` as 'path: message' lines (empty when valid)."""
    validator = jsonschema.Draft7Validator(_schema(version))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
