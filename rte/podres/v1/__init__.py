"""Generated protobuf and gRPC stubs of the kubelet podresources v1 API.

Do not edit: regenerate with ``hack/gen-protos.sh`` from ``protos/podresources/v1/api.proto``;
``hack/check-protos.sh`` (run in CI) fails when they drift.
"""
