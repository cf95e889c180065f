"""Readers of evaluation harnesses' own logs: lm-evaluation-harness, Inspect AI, HELM and Every Eval Ever.

Each reader turns one drop, exactly as the harness wrote it, into :class:`DerivedUpload` s, the same
(benchmark, agent, rows, benchmark.yaml) a user would write under ``raw/``, plus one :class:`IngestError` per bad
file, line or sample. Storage-agnostic and pure: a reader gets the relative paths of a drop and ``read(path) ->
bytes``; it never writes, and never raises for a bad log.

::

    from agielo_dagster.domain.harness import harness_of, read_drop

    drop = harness_of("incoming/lm-eval/run1/EleutherAI__pythia-160m/results_2026-01-01T00-00-00.json")
    # Drop(harness='lm-eval', drop='incoming/lm-eval/run1')
    result = read_drop(drop.harness, [p for p in listing if p.startswith(drop.drop + "/")], storage_read)
    for upload in result.uploads: ...   # upload.benchmark, upload.agent, upload.rows, upload.spec_yaml
    for err in result.errors: ...       # err.file, err.rule, str(err)

Rules of the errors (``IngestError.rule``), shared by the readers:

================================  ==========================================================================
``<harness>_truncated``           a jsonl whose last line is cut off, an ``.eval`` that is no complete zip
``<harness>_json``                a line or a file that is not JSON
``sample_id_missing``             a sample without its id (``doc_id``, ``id``, ``instance_id``, ``sample_id``)
``sample_id_duplicate``           the same test case twice in one log
``lm_eval_metric_missing``        a sample lists a metric in ``metrics`` but has no value for it
``lm_eval_metric_numeric``        a metric value that is not a number
``lm_eval_results_missing``       a samples file without the results file of its timestamp
``lm_eval_no_samples``            a results file without samples (the run lacked ``--log_samples``)
``inspect_score_missing``         a sample without a score (it errored) or without one of the scorers
``inspect_score_value``           a score other than C, I, P, N, true/false or a number
``inspect_log_status``            a log whose run did not finish (status ``error`` or ``cancelled``)
``inspect_not_installed``         inspect-ai is not installed (optional dependency, extra ``harness``)
``helm_run_spec_missing``         ``per_instance_stats.json`` without ``run_spec.json``, and the reverse
``helm_metric_missing``           no known per-instance metric, or an instance without it
``eee_metric_missing``            a record with neither ``evaluation.score`` nor ``is_correct``
``eee_no_samples``                an aggregate ``<uuid>.json`` without its ``<uuid>_samples.jsonl``
``metric_finite``                 NaN or ±inf; ``metric_in_range``: outside a range the log declares
``harness_duplicate``             two logs claim the same (model, task); both are refused
``log_size``, ``log_not_empty``,  as for ordinary uploads
``utf8``
``<harness>_unreadable``          anything else that went wrong reading the file, with the exception
================================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from .common import DerivedUpload, Drop, HarnessResult, Reader, check_duplicates, harness_of, infer_spec, merge_specs, safe_name
from .eee import read_eee
from .helm import read_helm
from .inspect_log import read_inspect
from .lm_eval import read_lm_eval

__all__ = [
    "READERS",
    "DerivedUpload",
    "Drop",
    "HarnessResult",
    "check_duplicates",
    "harness_of",
    "infer_spec",
    "merge_specs",
    "read_drop",
    "read_eee",
    "read_helm",
    "read_inspect",
    "read_lm_eval",
    "safe_name",
]

READERS = {"lm-eval": read_lm_eval, "inspect": read_inspect, "helm": read_helm, "eee": read_eee}


def read_drop(harness: str, paths: Sequence[str], read: Reader) -> HarnessResult:
    """Read one drop with the reader named by :func:`harness_of` (``lm-eval``, ``inspect``, ``helm``, ``eee``)."""
    if harness not in READERS:
        raise ValueError(f"unknown harness {harness!r}; known: {', '.join(READERS)}")
    return READERS[harness](list(paths), read)
