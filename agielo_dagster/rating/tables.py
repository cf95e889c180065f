"""The result tables every model shares: the snapshot table, the test cases' table with Arrow ids, a table's flavour."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .frames import Flavour, Table, to_flavour

__all__ = ["from_arrow", "snapshot_table", "with_ids"]


def snapshot_table(fractions, agent_ids, a_mu_at, a_sig_at, tc_fractions, test_case_ids, t_mu_at, t_sig_at):
    """The snapshots as one pyarrow table, one chunk per fraction and kind: the ids are converted to
    strings once and every chunk of a kind shares them, as it shares its ``kind`` array; ``mu`` and
    ``sigma`` are views of the snapshot arrays. A wide benchmark's test-case rows are not copied.

    (A pandas frame per kind, concatenated and converted, held three copies of the test cases'
    rows at once: 600 bytes a test case, the peak of ``rate`` on a benchmark of one agent.)
    """
    import pyarrow as pa

    chunks: dict[str, list] = {name: [] for name in ("fraction", "kind", "id", "mu", "sigma")}
    for kind, fr, ids, mu_at, sig_at in (
        ("agent", fractions, agent_ids, a_mu_at, a_sig_at),
        ("test_case", tc_fractions, test_case_ids, t_mu_at, t_sig_at),
    ):
        n = len(ids)
        strings = (
            ids.cast(pa.large_string())
            if isinstance(ids, pa.Array)
            else pa.array(np.asarray(ids, dtype=object), pa.large_string())
        )
        kinds = pa.array([kind], pa.large_string()).take(pa.array(np.zeros(n, dtype=np.int64)))
        for k, f in enumerate(np.asarray(fr, dtype=np.float64)):
            chunks["fraction"].append(pa.array(np.full(n, f)))
            chunks["kind"].append(kinds)
            chunks["id"].append(strings)
            chunks["mu"].append(pa.array(np.ascontiguousarray(mu_at[k], dtype=np.float64)))
            chunks["sigma"].append(pa.array(np.ascontiguousarray(sig_at[k], dtype=np.float64)))
    types = {
        "fraction": pa.float64(),
        "kind": pa.large_string(),
        "id": pa.large_string(),
        "mu": pa.float64(),
        "sigma": pa.float64(),
    }
    return pa.table({name: pa.chunked_array(c, types[name]) for name, c in chunks.items()})


_STRING_BYTES = 2**31 - 1  # the most bytes an Arrow ``string`` array holds


def with_ids(test_cases: pd.DataFrame, ids, flavour: Flavour) -> Table:
    """The test-case table in ``flavour``, its ``test_case_id`` column first: ``ids`` given as Arrow strings are put in
    as Arrow strings (``string``, in chunks under 2 GiB each, as a pandas column of Python strings converts), with the
    same schema and pandas metadata."""
    import pyarrow as pa

    if not isinstance(ids, pa.Array):
        return to_flavour(test_cases, flavour)
    if flavour != "arrow" or len(ids) == 0:
        return to_flavour(
            test_cases.assign(test_case_id=ids.to_numpy(zero_copy_only=False))[["test_case_id", *test_cases]], flavour
        )
    head = test_cases.head(1).copy()
    head.insert(0, "test_case_id", ids.slice(0, 1).to_pylist())
    schema = pa.Schema.from_pandas(head, preserve_index=False)
    table = pa.Table.from_pandas(test_cases, preserve_index=False)
    ids = ids.cast(pa.large_string())
    offsets = np.frombuffer(ids.buffers()[1], dtype=np.int64, count=len(ids) + 1, offset=8 * ids.offset)
    bounds = [0]
    while bounds[-1] < len(ids):
        end = int(np.searchsorted(offsets, offsets[bounds[-1]] + _STRING_BYTES, "right")) - 1
        bounds.append(max(end, bounds[-1] + 1))
    chunks = [ids.slice(a, b - a).cast(pa.string()) for a, b in zip(bounds[:-1], bounds[1:], strict=False)]
    return pa.Table.from_arrays([pa.chunked_array(chunks, pa.string()), *table.columns], schema=schema)


def from_arrow(table, flavour: Flavour) -> Table:
    """A pyarrow table as the caller's flavour."""
    if flavour == "arrow":
        return table
    if flavour == "pandas":
        return table.to_pandas()
    import polars as pl

    return pl.from_arrow(table)
