"""The file-backed podresources lister over a scenario directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rte.errors import InputError, NotSupportedError
from rte.podres.files import PodResourcesFiles
from rte.podres.reader import DirectoryReader
from rte.podres.source import KubeletReader
from tests.helpers.paths import R640_STATIC

STATIC = R640_STATIC


def _copy(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(STATIC / name, tmp_path / name)
    return tmp_path


def test_the_directory_reader_is_a_kubelet_reader() -> None:
    assert isinstance(DirectoryReader(STATIC), KubeletReader)


def test_files_are_re_read_on_every_call(tmp_path: Path) -> None:
    files = PodResourcesFiles(_copy(tmp_path, "list.gojson.json"))
    assert len(files.list()) == 3
    doc = json.loads((tmp_path / "list.gojson.json").read_text())
    doc["pod_resources"] = doc["pod_resources"][:1]
    (tmp_path / "list.gojson.json").write_text(json.dumps(doc))
    assert len(files.list()) == 1


def test_protobuf_is_preferred_when_several_encodings_are_present(tmp_path: Path) -> None:
    _copy(tmp_path, "list.pb")
    (tmp_path / "list.protojson.json").write_text("{}")
    assert len(PodResourcesFiles(tmp_path).list()) == 3
    assert PodResourcesFiles(tmp_path, "protojson").list() == ()


def test_a_plain_json_file_in_either_style_is_read(tmp_path: Path) -> None:
    shutil.copy(STATIC / "list.protojson.json", tmp_path / "list.json")
    assert PodResourcesFiles(tmp_path).list() == PodResourcesFiles(STATIC).list()


def test_a_missing_allocatable_file_looks_like_an_older_kubelet(tmp_path: Path) -> None:
    files = PodResourcesFiles(_copy(tmp_path, "list.pb"))
    with pytest.raises(NotSupportedError, match="get_allocatable_resources"):
        files.get_allocatable()


def test_a_missing_list_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"list\.\*: no list\.pb or .* file"):
        PodResourcesFiles(tmp_path).list()


def test_get_falls_back_to_the_list_and_returns_none_for_unknown_pods(tmp_path: Path) -> None:
    files = PodResourcesFiles(_copy(tmp_path, "list.pb", "get.pb"))
    worker = files.get("cnf", "numa1-worker-7f9c")
    assert worker is not None and worker.containers[0].cpu_ids == {3, 5, 7, 9, 55, 57, 59, 61}
    assert files.get("cnf", "dpdk-app-0") is not None
    assert files.get("cnf", "nope") is None


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("list.pb", b"\xff\xff\xff", "not a valid ListPodResourcesResponse"),
        ("list.json", b'{"pod_resources": [', "not valid JSON"),
        ("list.json", b"\xff\xfe{", "not valid JSON"),
        ("list.json", b"[1, 2]", "expected an object"),
    ],
)
def test_malformed_files_are_one_line_input_errors_naming_the_file(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError) as err:
        PodResourcesFiles(tmp_path).list()
    assert str(tmp_path / name) in str(err.value)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
