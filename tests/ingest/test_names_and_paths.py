"""Names come from other people's scripts: refused before any path is built from them."""

import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.contract import IngestError, check_name
from agielo_dagster.domain.layout import classify_raw_path


@pytest.mark.parametrize(
    "name",
    [
        "..",
        "../etc",
        "a/b",
        "a\\b",
        "/abs",
        "C:\\x",
        "a..b",
        "bell\x07",
        "tab\tname",
        "new\nline",
        "nul\x00",
        "x" * 129,
        "",
        ".hidden",
        "-flag",
    ],
)
def test_unsafe_names_are_refused(name):
    with pytest.raises(IngestError) as err:
        check_name(name, "agent", "raw/b/x.csv")
    assert err.value.rule == "safe_name"


@pytest.mark.parametrize("name", ["gpt-4o", "llama_3.1_70b", "resnet50+tta", "A1", "x" * 128])
def test_ordinary_names_pass(name):
    assert check_name(name, "agent", "raw/b/x.csv") == name


@pytest.mark.parametrize(
    "path, expected",
    [
        ("raw/mmlu/gpt.csv", ("upload", "mmlu", "gpt")),
        ("raw/mmlu/gpt.PARQUET", ("upload", "mmlu", "gpt")),
        ("raw/mmlu/benchmark.yaml", ("spec", "mmlu", "")),
        ("raw/mmlu/.gpt.csv.part", None),
    ],
)
def test_raw_paths_are_classified(path, expected):
    raw = classify_raw_path(path)
    assert (raw and (raw.kind, raw.benchmark, raw.agent)) == expected


@pytest.mark.parametrize(
    "path, rule",
    [
        ("raw/mmlu/sub/gpt.csv", "layout"),
        ("raw/gpt.csv", "layout"),
        ("raw/mmlu/../../etc/passwd", "layout"),
        ("raw/../gpt.csv", "safe_name"),
        ("raw/../x/gpt.csv", "layout"),
        ("raw/mmlu/gpt.xlsx", "log_format"),
        ("raw/mmlu/README", "log_format"),
        ("raw/mm lu/gpt.csv", "safe_name"),
    ],
)
def test_raw_paths_outside_the_contract_are_refused(path, rule):
    with pytest.raises(IngestError) as err:
        classify_raw_path(path)
    assert err.value.rule == rule and err.value.file == path


@pytest.mark.parametrize("path", ["../outside", "warehouse/../../outside", "/etc/passwd", "raw/../../x"])
def test_storage_never_builds_a_path_outside_its_root(tmp_path, path):
    with pytest.raises(ValueError, match="leaves the storage root"):
        ObjectStorage(root=str(tmp_path)).store.full_path(path)


def test_storage_refuses_to_remove_uploads(tmp_path):
    with pytest.raises(PermissionError):
        ObjectStorage(root=str(tmp_path)).store.remove("raw/mmlu/gpt.csv")
    with pytest.raises(PermissionError):
        ObjectStorage(root=str(tmp_path)).store.write_bytes("raw/mmlu/gpt.csv", b"x")


def test_storage_config_shown_in_the_ui_holds_no_credentials():
    fields = set(ObjectStorage.model_fields)
    assert fields == {"root", "endpoint_url", "max_upload_bytes"}
