#!/usr/bin/env bash
# Fail (non-zero, one line) if the committed stubs in rte/podres/v1/ are not what
# hack/gen-protos.sh produces from protos/podresources/v1/api.proto.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! "$repo/hack/gen-protos.sh" "$tmp" >"$tmp/gen.log" 2>&1; then
    echo "check-protos: generation failed: $(tr '\n' ' ' <"$tmp/gen.log")"
    exit 1
fi
for f in api_pb2.py api_pb2.pyi api_pb2_grpc.py; do
    if ! cmp -s "$tmp/rte/podres/v1/$f" "$repo/rte/podres/v1/$f"; then
        echo "check-protos: rte/podres/v1/$f is stale; run hack/gen-protos.sh and commit the result"
        exit 1
    fi
done
