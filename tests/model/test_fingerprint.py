import json
import random

import pytest

from rte.model import fingerprint as fp
from rte.model.vocabulary import FingerprintMethod
from tests.helpers.paths import FIXTURES
from tests.helpers.xxh64_reference import reference_fingerprint

VECTOR_PODS = FIXTURES / "fingerprint" / "pods.json"


def _vector_pods() -> list[tuple[str, str]]:
    return [(p["namespace"], p["name"]) for p in json.loads(VECTOR_PODS.read_text())]


def test_public_vector_of_259_pods_in_file_order() -> None:
    assert fp.compute(_vector_pods()) == "pfp0v001e477a4e3b2fc0ec6"


def test_public_vector_is_independent_of_order() -> None:
    pods = _vector_pods()
    rng = random.Random(42)
    for _ in range(5):
        rng.shuffle(pods)
        assert fp.compute(pods) == "pfp0v001e477a4e3b2fc0ec6"


def test_single_pod_and_empty_set_vectors() -> None:
    assert fp.compute([("namespace1", "pod1")]) == "pfp0v0019e0420efb37746c6"
    assert fp.compute([]) == "pfp0v001ef46db3751d8e999"
    assert fp.Fingerprint().sign() == "pfp0v001ef46db3751d8e999"


def test_duplicates_count_because_it_is_a_multiset_hash() -> None:
    once = fp.compute([("ns", "a")])
    twice = fp.compute([("ns", "a"), ("ns", "a")])
    assert once != twice
    assert twice == reference_fingerprint([("ns", "a"), ("ns", "a")])


def test_namespace_and_name_are_not_interchangeable() -> None:
    assert fp.compute([("a", "b")]) != fp.compute([("b", "a")])


@pytest.mark.parametrize(
    "pods",
    [
        [("kube-system", "etcd-0")],
        [("ünïcödé", "pöd-😀"), ("日本", "ポッド")],
        [("", "")],
        [("ns", "x" * 31), ("ns", "y" * 32), ("ns", "z" * 33), ("n" * 100, "w" * 257)],
        [("default", f"pod-{i}") for i in range(300)],
    ],
)
def test_matches_an_independent_implementation_of_the_algorithm(pods: list[tuple[str, str]]) -> None:
    assert fp.compute(pods) == reference_fingerprint(pods)


def test_random_unicode_pod_sets_match_the_independent_implementation() -> None:
    rng = random.Random(7)
    alphabet = "abcxyz-.0129äöüßéñ中文字😀\u200b"
    for _ in range(40):
        pods = [
            (
                "".join(rng.choices(alphabet, k=rng.randint(0, 40))),
                "".join(rng.choices(alphabet, k=rng.randint(0, 70))),
            )
            for _ in range(rng.randint(0, 12))
        ]
        assert fp.compute(pods) == reference_fingerprint(pods)


def test_incremental_and_one_shot_agree() -> None:
    f = fp.Fingerprint()
    for ns, name in _vector_pods():
        f.add(ns, name)
    assert len(f) == 259
    assert f.sign() == "pfp0v001e477a4e3b2fc0ec6"
    f.check("pfp0v001e477a4e3b2fc0ec6")


@pytest.mark.parametrize(
    "sign", ["", "pfp0", "pfp0v001abc", "xxxxv001e477a4e3b2fc0ec6", "PFP0v001e477a4e3b2fc0ec6"]
)
def test_check_reports_malformed_input(sign: str) -> None:
    with pytest.raises(fp.MalformedFingerprintError, match="malformed fingerprint"):
        fp.Fingerprint().check(sign)


def test_check_reports_an_incompatible_version() -> None:
    with pytest.raises(fp.IncompatibleVersionError, match="incompatible version"):
        fp.Fingerprint().check("pfp0v002e477a4e3b2fc0ec6")


@pytest.mark.parametrize(
    "sign",
    [
        "pfp0v001e477a4e3b2fc0ec7",  # another pod set
        "pfp0v001E477A4E3B2FC0EC6",  # compared as text: uppercase is a mismatch
        "pfp0v00100e477a4e3b2fc0ec6",  # differently padded
        "pfp0v001e477a4e3",  # 8 characters of sum: well-formed, but not ours
    ],
)
def test_check_reports_a_mismatch_with_both_sums(sign: str) -> None:
    f = fp.Fingerprint()
    for ns, name in _vector_pods():
        f.add(ns, name)
    with pytest.raises(fp.FingerprintMismatchError) as info:
        f.check(sign)
    assert str(info.value) == f"fingerprint mismatch got=e477a4e3b2fc0ec6 expected={sign[8:]}"
    assert info.value.computed == "e477a4e3b2fc0ec6"


def test_the_three_errors_are_distinct_fingerprint_errors() -> None:
    kinds = {fp.MalformedFingerprintError, fp.IncompatibleVersionError, fp.FingerprintMismatchError}
    assert len(kinds) == 3
    assert all(issubclass(k, fp.FingerprintError) for k in kinds)
    assert not issubclass(fp.FingerprintMismatchError, fp.MalformedFingerprintError)


def test_tracing_status_records_pods_in_insertion_order_with_go_json_keys() -> None:
    t = fp.TracingFingerprint(node_name="worker-1")
    t.add("ns2", "b")
    t.add("ns1", "a")
    computed = t.sign()
    with pytest.raises(fp.FingerprintMismatchError):
        t.check("pfp0v0010000000000000000")
    status = json.loads(t.status.to_json())
    assert status == {
        "fingerprintExpected": "pfp0v0010000000000000000",
        "fingerprintComputed": computed,
        "pods": [{"Namespace": "ns2", "Name": "b"}, {"Namespace": "ns1", "Name": "a"}],
        "nodeName": "worker-1",
    }
    assert t.status.repr().splitlines() == [
        '> processing node "worker-1"',
        "> processing 2 pods",
        "+ ns2/b",
        "+ ns1/a",
        f"= {computed}",
        "V pfp0v0010000000000000000",
    ]


def test_empty_status_omits_every_key() -> None:
    assert fp.Status().to_dict() == {}


def test_constants_match_the_published_names() -> None:
    assert fp.ATTRIBUTE == "nodeTopologyPodsFingerprint"
    assert fp.ATTRIBUTE_METHOD == "nodeTopologyPodsFingerprintMethod"
    assert fp.ANNOTATION == "topology.node.k8s.io/fingerprint"
    assert [m.value for m in FingerprintMethod] == ["all", "with-exclusive-resources"]
