"""Fixtures shared by the tests of deploy/ (manifests, RBAC, admission policy, scheduler config).

None so far: deploy/ is tests.helpers.paths.DEPLOY; hack/check_manifests.py is loaded with
tests.helpers.scripts.load_script.
"""
