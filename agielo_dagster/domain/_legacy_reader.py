"""Temporary bridge to the old readers until domain/readers.py lands (deleted then)."""

import pyarrow as pa

from ..ingest import log_to_matches, read_log


def read_upload(data: bytes, file: str, spec, *, max_bytes: int) -> pa.Table:
    log = read_log(data, file, max_bytes=max_bytes)
    matches, metadata = log_to_matches(log, file=file, agent="x", spec=spec, version="")
    table = pa.table(
        {
            "test_case_id": pa.array(matches["test_case_id"].astype(str), pa.string()),
            "metric": pa.array(matches["metric"], pa.float64()),
            "score": pa.array(matches["score"], pa.float64()),
        }
    )
    for column in metadata.columns.drop("test_case_id"):
        table = table.append_column(f"meta.{column}", pa.array(metadata[column].to_numpy()))
    return table
