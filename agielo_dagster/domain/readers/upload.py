"""The input contract over a read table (ids, metrics, scoring), and reading without it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...rating.scoring import ScoringError
from ..contract import (
    BenchmarkSpec,
    IngestError,
    Problems,
)
from .common import _PADDED_RE, ID_COLUMN, _chunked, _first, _Frame, _mask, _names, _prelude, _q
from .csv_format import _csv_metric, _read_csv
from .jsonl_format import _read_jsonl
from .parquet_format import _read_parquet

_BLANK_ROW = "has no values (a blank line inside the file?); remove it"


def _read_upload(data: bytes, file: str, spec: BenchmarkSpec, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)
    metric_name = spec.metric

    def check_header(names: Sequence[str]) -> None:
        if ID_COLUMN not in names:
            hint = ""
            if len(names) == 1 and any(sep in names[0] for sep in ";\t|"):
                hint = " (wrong delimiter? CSV logs must be comma-separated)"
            else:
                near = [n for n in names if n.strip().lower() == ID_COLUMN]
                if near:
                    hint = f" (found {_q(near[0])}: column names are used exactly as written)"
            raise IngestError(file, "has_test_case_id", f"no test_case_id column; columns are {_names(names)}{hint}")
        if metric_name not in names:
            raise IngestError(
                file,
                "has_metric",
                f"no {_q(metric_name)} column (the metric named in benchmark.yaml); columns are {_names(names)}",
            )

    roles = {ID_COLUMN: "id", metric_name: "metric"}
    if fmt == "csv":
        frame = _read_csv(data, file, check_header)
        if frame.rows:
            metric, problem = _csv_metric(frame.columns[metric_name], metric_name)
            frame.columns[metric_name] = metric
            if problem:
                frame.problems[metric_name] = problem
    elif fmt == "jsonl":
        frame = _read_jsonl(data, file, roles, check_header)
    else:
        frame = _read_parquet(data, file, roles, check_header, max_bytes)
    return _contract(frame, file, spec)


def _contract(frame: _Frame, file: str, spec: BenchmarkSpec) -> pa.Table:
    if frame.rows == 0:
        raise IngestError(file, "has_rows", "the file has a header but no rows")
    # every rule is checked and every broken one named (Problems): a later row of one rule never hides
    # an earlier row of another
    problems = Problems(file, frame.line_of)

    ids = frame.columns[ID_COLUMN]
    lengths = pc.binary_length(ids)
    ids_missing = False
    if ids.null_count or ID_COLUMN in frame.problems or pc.min(lengths).as_py() == 0:
        ids_missing = True
        missing = pc.or_kleene(pc.is_null(ids), pc.equal(lengths, 0))
        _first_value_problem(
            frame,
            ID_COLUMN,
            missing,
            problems.add,
            lambda r, n: f"test_case_id is missing or empty ({n} row(s)); every row needs an id",
            problems,
        )
    padded = pc.fill_null(pc.match_substring_regex(ids, _PADDED_RE), False)
    problems.add_rows(
        _mask(padded),
        "test_case_id_trimmed",
        lambda r, n: (
            f"test_case_id {_q(ids[r].as_py())} has leading or trailing white space ({n} row(s)); ids are used as written"
        ),
    )
    if not ids_missing and len(pc.unique(ids)) != frame.rows:  # (count_distinct is about twice as slow)
        codes = ids.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
        _, first_at = np.unique(codes, return_index=True)
        again = np.ones(len(codes), dtype=bool)
        again[first_at] = False
        problems.add_rows(
            again,
            "test_case_id_unique",
            lambda r, n: (
                f"test case {_q(ids[r].as_py())} appears again (first at data row {int(first_at[codes[r]]) + 1}); "
                f"{n} duplicate row(s)"
            ),
        )

    metric = frame.columns[spec.metric]
    if metric.null_count or spec.metric in frame.problems:
        _first_value_problem(
            frame,
            spec.metric,
            pc.is_null(metric),
            problems.add,
            lambda r, n: f"{spec.metric} is missing or empty ({n} row(s)); every row needs a metric value",
            problems,
        )
    values = metric.to_numpy()
    present = _mask(pc.is_valid(metric))
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        outside = finite & ((values < spec.scoring.lo) | (values > spec.scoring.hi))  # binary: (-inf, inf), never
    problems.add_rows(
        present & ~finite,
        "metric_finite",
        lambda r, n: f"{spec.metric} {float(values[r])!r} is not a finite number ({n} value(s))",
    )
    problems.add_rows(
        outside,
        "metric_in_range",
        lambda r, n: (
            f"{spec.metric} {float(values[r])!r} is outside [{spec.scoring.lo:g}, {spec.scoring.hi:g}] "
            f"of scoring '{spec.scoring.name}' ({n} value(s))"
        ),
    )
    problems.raise_if_any()
    try:
        score = spec.scoring.score(values, source=file)
    except ScoringError as exc:  # the checks above are the scoring's own: kept as a guard
        r = exc.row if exc.row is not None else 0
        raise IngestError(file, exc.rule, str(exc), row=r + 1, line=frame.line_of(r)) from None

    names = [ID_COLUMN, "metric", "score"]
    arrays = [ids.cast(pa.string()), metric, _chunked(np.asarray(score, dtype=np.float64))]
    for name in frame.names:
        if name not in (ID_COLUMN, spec.metric):
            names.append(f"meta.{name}")
            arrays.append(frame.columns[name])
    return pa.Table.from_arrays(arrays, names=names)


def _first_value_problem(frame: _Frame, column: str, missing, reject, describe_missing, problems: Problems | None = None) -> None:
    """Reject the rows whose value is of a bad type (per the reader) and those whose value is missing.

    With ``problems`` (which gathers instead of raising), every such row is recorded under its rule:
    the first described, the next ones numbered, the rest counted; without, the first is raised.
    """
    typed = frame.problems.get(column)
    if typed is not None:  # the reader nulls every value of a bad type: those rows are not also "missing"
        if problems is not None:
            typed.add_to(problems)
        else:
            reject(typed.row, typed.rule, typed.detail)
        ok = np.ones(len(missing), dtype=bool)
        ok[np.asarray(typed.rows, dtype=np.int64)] = False
        missing = pc.and_(missing, pa.array(ok))
    r = _first(missing)
    if r >= 0:
        if frame.is_blank is not None and frame.is_blank(r):
            reject(r, "csv_blank_row", _BLANK_ROW)
            return
        rule = "test_case_id_present" if column == ID_COLUMN else "metric_present"
        if problems is not None:
            problems.add_rows(_mask(missing), rule, describe_missing)
        else:
            reject(r, rule, describe_missing(r, pc.sum(missing).as_py()))


def _read_rows(data: bytes, file: str, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)
    if fmt == "csv":
        frame = _read_csv(data, file, lambda names: None)
        if len(frame.names) > 1 and frame.rows:
            blank = None
            for column in frame.columns.values():
                empty = pc.equal(pc.binary_length(column), 0)
                blank = empty if blank is None else pc.and_(blank, empty)
            r = _first(blank)
            if r >= 0:
                raise IngestError(file, "csv_blank_row", _BLANK_ROW, row=r + 1, line=frame.line_of(r))
    elif fmt == "jsonl":
        frame = _read_jsonl(data, file, {}, lambda names: None)
    else:
        frame = _read_parquet(data, file, {}, lambda names: None, max_bytes)
    return pa.Table.from_arrays([frame.columns[n] for n in frame.names], names=list(frame.names))
