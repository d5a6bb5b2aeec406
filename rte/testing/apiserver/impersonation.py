"""Impersonation as a Kubernetes 1.36+ cluster answers the one kind rte uses: an agent acting as
the node it runs on, to list and watch that node's pods only.

What is emulated (the double has no RBAC; the service account's own rights are not modelled):

* Constrained impersonation (KEP-5284, beta and on by default in 1.36): a service account token
  bound to a pod on node N may impersonate user ``system:node:N`` when it holds the verb
  ``impersonate:associated-node`` on ``nodes`` of ``authentication.k8s.io`` and
  ``impersonate-on:associated-node:<verb>`` on the resource it acts on. Enabled per server
  (``FakeApiServer(node_impersonation=True)``); off, any impersonation is refused, as on a
  cluster without the feature where the agent has no plain ``impersonate`` right.
* The impersonated request is then authorized as the node: the Node authorizer with field
  selectors (KEP-4601 AuthorizeNodeWithSelectors, on by default since 1.32) lets
  ``system:node:N`` in group ``system:nodes`` list and watch pods only with the field selector
  ``spec.nodeName=N`` (kubernetes/kubernetes plugin/pkg/auth/authorizer/node/node_authorizer.go,
  its pod list/watch rule with selectors; pkg/auth/nodeidentifier/default.go for who is a node).
  Every other request as a node is refused here (the real authorizer allows more, which rte never
  asks for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .status import ApiError

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"


def authorize_impersonation(
    user: str | None,
    groups: Sequence[str],
    *,
    enabled: bool,
    verb: str,
    resource: str,
    query: Mapping[str, str],
) -> None:
    """Raise a 403 :class:`ApiError` unless the request (impersonating ``user`` with ``groups``,
    or not impersonating when ``user`` is None) may go on."""
    if user is None:
        if groups:
            raise ApiError(400, "requested impersonation of groups without impersonating a user")
        return
    if not enabled:
        raise ApiError(403, f'users "{user}" is forbidden: impersonation is not allowed for this user')
    if not user.startswith(NODE_USER_PREFIX) or NODES_GROUP not in groups:
        raise ApiError(
            403, f'users "{user}" is forbidden: only the node the agent runs on may be impersonated'
        )
    node = user.removeprefix(NODE_USER_PREFIX)
    selector = query.get("fieldSelector", "")
    if resource == "pods" and verb in ("list", "watch") and selector == f"spec.nodeName={node}":
        return
    raise ApiError(
        403,
        f'pods is forbidden: User "{user}" cannot {verb} resource "{resource}": can only {verb} '
        f"pods with fieldSelector spec.nodeName={node}",
    )
