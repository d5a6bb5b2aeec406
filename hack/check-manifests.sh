#!/usr/bin/env bash
# Validate deploy/*.yaml against the Kubernetes OpenAPI schemas (bundled by kubernetes-validate,
# from the `test` extra; no downloads), strictly, for Kubernetes 1.30 and the newest known.
# Prints one line per problem and exits 1 when there is any; see hack/check_manifests.py.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${PYTHON:-$repo/.venv/bin/python}" "$repo/hack/check_manifests.py" "$@"
