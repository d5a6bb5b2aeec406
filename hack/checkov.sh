#!/usr/bin/env bash
# checkov (Kubernetes checks) on manifests, offline: no guideline download, no upload. Every
# finding that stays is skipped in place by a `checkov.io/skipN: CKV_...=reason` annotation on its
# object (annotations survive `kubectl kustomize`; YAML comments do not).
#
# Usage: hack/checkov.sh FILE...   (.ci/run passes every overlay rendered by kubectl kustomize)
# checkov is pinned in pyproject.toml's `checkov` extra: a new release may add checks.
set -euo pipefail
if (($# == 0)); then
  echo "usage: hack/checkov.sh FILE..." >&2
  exit 2
fi
if ! command -v checkov >/dev/null 2>&1; then
  echo "checkov: not installed (pip install -e '.[checkov]')" >&2
  exit 1
fi
args=()
for file in "$@"; do args+=(--file "$file"); done
exec checkov --framework kubernetes --skip-download --compact --quiet "${args[@]}"
