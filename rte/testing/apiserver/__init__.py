"""A kube-apiserver test double speaking the real REST protocol; see ``hack/fake_apiserver.py``."""

from .faults import Faults, RequestRecord
from .server import DEFAULT_CRD, DEFAULT_TOKEN, FakeApiServer
from .status import ApiError

__all__ = ["DEFAULT_CRD", "DEFAULT_TOKEN", "ApiError", "FakeApiServer", "Faults", "RequestRecord"]
