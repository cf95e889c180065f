"""The input contract over a read table (ids, metrics, scoring), and reading without it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...rating.scoring import ScoringError
from ..contract import (
    BenchmarkSpec,
    IngestError,
    Problems,
)
from .common import _PADDED_RE, ID_COLUMN, _check_bytes, _chunked, _first, _Frame, _guarded, _mask, _names, _prelude, _q
from .csv_format import _csv_metric, _read_csv, _SmallCsv
from .jsonl_format import _read_jsonl
from .parquet_format import _read_parquet

_BLANK_ROW = "has no values (a blank line inside the file?); remove it"
TOGETHER_BYTES = 1 << 20
"""The largest csv file checked together with others: a larger one's checks cost little beside its rows (and it is
not copied into a batch's columns)."""


def _read_upload(data: bytes, file: str, spec: BenchmarkSpec, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)
    if fmt == "csv":
        return _checked_csv(_read_csv(data, file, _header_check(file, spec)), file, spec)
    roles = {ID_COLUMN: "id", spec.metric: "metric"}
    if fmt == "jsonl":
        frame = _read_jsonl(data, file, roles, _header_check(file, spec))
    else:
        frame = _read_parquet(data, file, roles, _header_check(file, spec), max_bytes)
    return _contract(frame, file, spec)


def _checked_csv(frame: _Frame, file: str, spec: BenchmarkSpec) -> pa.Table:
    """The contract over a csv file's text columns (its metric parsed first)."""
    if frame.rows:
        metric, problem = _csv_metric(frame.columns[spec.metric], spec.metric)
        frame = replace(frame, columns={**frame.columns, spec.metric: metric}, problems=dict(frame.problems))
        if problem:
            frame.problems[spec.metric] = problem
    return _contract(frame, file, spec)


def _read_uploads(
    items: Sequence[tuple[bytes, str]], spec: BenchmarkSpec, max_bytes: int, on_item: Callable[[int], None] = lambda i: None
) -> list[pa.Table | IngestError]:
    """:func:`_read_upload` of each ``(data, file)``, as its table or its error; csv files of the same columns and up to
    :data:`TOGETHER_BYTES` checked together (see :func:`~agielo_dagster.domain.readers.read_uploads`).

    ``on_item(i)`` is called before the ``i``-th file is read, and with ``len(items)`` before the files are checked
    together (the decoder process sets each file's CPU limit there)."""
    out: list[pa.Table | IngestError | None] = [None] * len(items)
    together: dict[tuple, list[tuple[int, _Frame | _SmallCsv]]] = {}
    for i, (data, file) in enumerate(items):
        on_item(i)
        _check_bytes(data)
        data = bytes(data)

        def first_pass(data=data, file=file) -> pa.Table | _Frame | _SmallCsv:
            if _prelude(data, file, max_bytes) != "csv" or len(data) > TOGETHER_BYTES:
                return _read_upload(data, file, spec, max_bytes)
            return _read_csv(data, file, _header_check(file, spec), small_as_text=True)

        try:
            read = _guarded(file, first_pass)
        except IngestError as err:
            out[i] = err
            continue
        if isinstance(read, _Frame | _SmallCsv):
            together.setdefault((type(read), *read.names), []).append((i, read))
        else:
            out[i] = read
    on_item(len(items))
    for members in together.values():
        tables = _checked_together([read for _, read in members], spec) if len(members) > 1 else None
        for k, (i, read) in enumerate(members):
            file = items[i][1]
            if tables is not None:
                out[i] = tables[k]
                continue
            try:
                frame = read.frame() if isinstance(read, _SmallCsv) else read
                out[i] = _guarded(file, lambda: _checked_csv(frame, file, spec))  # noqa: B023
            except IngestError as err:
                out[i] = err
    return out


def _checked_together(reads: list[_Frame] | list[_SmallCsv], spec: BenchmarkSpec) -> list[pa.Table] | None:
    """The contract over several csv files of the same columns as one pass, each file's table a slice of its result;
    None when any file breaks a rule (each is then checked alone, so that its error names its own file and rows).

    Every check is per value but the ids' uniqueness, checked here within each file, and the scoring is per value
    too: each slice is the table the file alone gives.
    """
    if any(read.rows == 0 for read in reads):
        return None
    names = reads[0].names
    lengths = np.fromiter((read.rows for read in reads), dtype=np.int64, count=len(reads))
    uploads = np.repeat(np.arange(len(reads)), lengths)
    try:
        # one array a column: compute over a thousand chunks of a few rows would cost per chunk
        if isinstance(reads[0], _SmallCsv):
            columns = {
                n: pa.chunked_array([pa.array([v for read in reads for v in read.values[j]], pa.string())])
                for j, n in enumerate(names)
            }
        else:
            columns = {n: pa.chunked_array([pa.concat_arrays([c for r in reads for c in r.columns[n].chunks])]) for n in names}
        metric, problem = _csv_metric(columns[spec.metric], spec.metric)
        if problem:
            return None
        frame = _Frame(list(names), {**columns, spec.metric: metric}, int(lengths.sum()), lambda r: None)
        table = _contract(frame, "(uploads checked together)", spec, uploads=uploads)
    except Exception:  # noqa: BLE001 - whatever it is, each file alone names it
        return None
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return [table.slice(int(offsets[k]), int(lengths[k])) for k in range(len(reads))]


def _header_check(file: str, spec: BenchmarkSpec):
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

    return check_header


def _contract(frame: _Frame, file: str, spec: BenchmarkSpec, *, uploads: np.ndarray | None = None) -> pa.Table:
    """The normalized table of ``frame``, or the IngestError naming every rule it breaks. ``uploads``: each row's
    file, where the frame holds several files (ids need then be unique within a file only; problems are not named
    per file)."""
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
    if not ids_missing and _repeats(ids, frame.rows, uploads):
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


def _repeats(ids: pa.ChunkedArray, rows: int, uploads: np.ndarray | None) -> bool:
    """Whether an id appears twice (within one file, where ``uploads`` says each row's file)."""
    if uploads is None:
        return len(pc.unique(ids)) != rows  # (count_distinct is about twice as slow)
    codes = pc.dictionary_encode(ids.combine_chunks()).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return len(np.unique(uploads * (int(codes.max()) + 1) + codes)) != rows


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
