"""Readers of evaluation harnesses' own logs: lm-evaluation-harness, Inspect AI, HELM and Every Eval Ever.

One :class:`HarnessReader` per format, registered in :data:`READERS` (``registry.py``).

Each reader turns one drop, exactly as the harness wrote it, into :class:`DerivedUpload` s, the same
(benchmark, agent, rows, benchmark.yaml) a user would write under ``raw/``, plus one :class:`IngestError` per bad
file, line or sample. Storage-agnostic and pure: a reader gets the relative paths of a drop and ``read(path) ->
bytes``; it never writes, and never raises for a bad log.

::

    from agielo_dagster.domain.harness import drops_of, harness_of, read_all, read_drop

    harness_of("incoming/lm-eval/run1/EleutherAI__pythia-160m/results_2026-01-01T00-00-00.json")
    # Drop(harness='lm-eval', drop='incoming/lm-eval/run1')
    for drop, paths in drops_of(listing).items():          # one drop: a folder (lm-eval, helm) or a file
        result = read_drop(drop.harness, paths, storage_read)
    result = read_all(listing, storage_read)               # every drop, and duplicate claims across drops
    for upload in result.uploads: ...   # upload.benchmark, upload.agent, upload.rows, upload.spec_yaml
    for err in result.errors: ...       # err.file, err.rule, str(err)

Rules of the errors (``IngestError.rule``). Every error names the file; a jsonl error also the record (``data row``)
and the line; an Inspect error the sample (id and epoch, or its member ``samples/<id>_epoch_<n>.json``).

======================================================  ==================================================================
``lm_eval_truncated``, ``eee_truncated``                 the last line of a jsonl is cut off (no newline, not JSON)
``inspect_truncated``                                    an ``.eval`` that is no complete zip archive
``lm_eval_json``, ``eee_json``                           a line in the middle that is not a JSON object
``lm_eval_results_json``, ``helm_json``, ``eee_json``    a JSON file that does not parse (the message says when it is cut off)
``sample_id_missing``                                    a sample without its id (``doc_id``, ``id``, ``instance_id``, ``sample_id``)
``sample_id_type``                                       an id that is neither a string nor an integer
``sample_id_duplicate``                                  the same test case twice in one log
``lm_eval_metric_missing``                               a sample lists a metric in ``metrics`` but has no value for it
``lm_eval_metric_numeric``                               a metric value that is not a number, or no numeric metric at all
``lm_eval_results_missing``                              a samples file without the ``results_<timestamp>.json`` of its run
``lm_eval_no_samples``                                   a results file without samples (the run lacked ``--log_samples``)
``lm_eval_model_name``, ``lm_eval_filter``               a ``model_name`` or ``filter`` that is not a name
``inspect_score_missing``                                a sample without a score (it errored) or without one of the scorers
``inspect_score_value``                                  a score other than C, I, P, N, true/false or a number
``inspect_log_status``                                   a run that did not finish (status ``error`` or ``cancelled``)
``inspect_header``, ``inspect_sample_invalid``,          a log that inspect_ai's own reader refuses (``inspect_log_invalid``), a
``inspect_log_invalid``                                  sample it refuses, a log without task or model
``inspect_not_installed``                                inspect-ai is not installed (optional dependency, extra ``harness``)
``helm_run_spec_missing``, ``helm_stats_missing``        ``per_instance_stats.json`` without ``run_spec.json``, or the reverse
``helm_run_spec``, ``helm_stats``                        a run spec without name or model; stats that are not HELM's shape
``helm_metric_missing``                                  no known per-instance metric, or an instance without it
``eee_model_missing``, ``eee_name_missing``              a record without ``model_id`` or ``evaluation_name``
``eee_metric_missing``                                   a record with neither ``evaluation.score`` nor ``is_correct``
``eee_aggregate``, ``eee_no_samples``                    an aggregate file without ``evaluation_results``, or without samples
``metric_finite``, ``metric_in_range``                   NaN or ±inf; a value outside the range the log declares
``log_size``, ``log_not_empty``, ``utf8``                as for ordinary uploads
``archive_size``, ``archive_members``,                   an ``.eval`` whose members expand past the upload limit (each or in
``archive_method``                                       all, or past their declared size), too many members, encrypted or
                                                         compressed other than stored, deflate or zstd (``harness/archive.py``)
``harness_duplicate``                                    two logs claim the same (model, task): of two harnesses, the one
                                                         ``registry.PRECEDENCE`` puts first is kept; of one, both are refused
``lm_eval_unreadable``, ``inspect_unreadable``,          anything else that went wrong reading the file (the reader raised,
``helm_unreadable``, ``eee_unreadable``                  an unforeseen shape), with the exception's class and message
======================================================  ==================================================================
"""

from __future__ import annotations

from .common import (
    DerivedUpload,
    Drop,
    HarnessReader,
    HarnessResult,
    Reader,
    check_duplicates,
    infer_spec,
    merge_specs,
    safe_name,
)
from .eee import read_eee
from .helm import read_helm
from .inspect_log import read_inspect
from .lm_eval import read_lm_eval
from .registry import READERS, drops_of, harness_of, read_all, read_drop, reader_environment, reader_version

__all__ = [
    "READERS",
    "DerivedUpload",
    "Drop",
    "HarnessReader",
    "HarnessResult",
    "Reader",
    "check_duplicates",
    "drops_of",
    "harness_of",
    "infer_spec",
    "merge_specs",
    "read_all",
    "read_drop",
    "read_eee",
    "read_helm",
    "read_inspect",
    "read_lm_eval",
    "reader_environment",
    "reader_version",
    "safe_name",
]
