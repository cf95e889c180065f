"""The whole pipeline as users drive it: a hypothesis state machine over a real Dagster instance and storage root.

Rules are what users do, each followed by the daemon settling (sensor ticks and the runs they request,
executed in-process on a real ephemeral Dagster instance, over a real local storage root):

- add, replace or delete a full upload of the benchmark ``quiz`` (csv, jsonl or parquet; graded values);
- a partial upload: the test cases of an ``agielo plan`` (the ``plan_placement`` job), or any small subset;
- an upload sharing no test case with the benchmark (``T000…`` where the others use ``t000…``);
- a partial upload whose test-case ids the benchmark never rated;
- a tag file ``raw/quiz/test_cases.csv``: good, bad (a rule), or of unknown test-case ids;
- ``benchmark.yaml`` changes: scoring identity / binary / minmax, ``higher_is_better: false``, a minmax range up
  to ``hi: 1.0e+300``, and extreme values in an upload;
- harness logs appearing, changing (a truncated line) and going: Every Eval Ever (the fixture files), and
  lm-eval when the deep profile has its real logs;
- a judgment set under ``judgments/`` (good, or breaking its contract);
- the nightly job ``rate_benchmarks_nightly`` on every benchmark;
- a kill between two steps: a run that materialized its first steps' outputs and not the later ones (the old files
  and records left, exactly what a kill between two steps leaves) plus a leftover temporary file; the next settle
  must heal it (kills inside a write, and of a real process, are ``test_healing.py``'s).

Invariants, checked after every step:

1. No step fails: every run of the step succeeded, and bad input ends as a named rule (``(rule: …)``),
   never as a FAILED step or a traceback; the CLI summary shows no ``FAILED``.
2. Every file under ``raw/`` (but ``benchmark.yaml``) and every derived upload has exactly one ledger row
   (accepted | rejected | refused); each one not accepted is in the CLI summary, the quarantine report and the
   ``uploads_accepted`` check of its benchmark's last run. Every file under ``incoming/`` belongs to exactly one
   recorded drop, whose errors are in the quarantine report. Every judgment set has its outcome: HodgeRank scores,
   or (bad sets) a named rule in the quarantine report.
3. Every accepted upload's agent is in ``agent_ratings``, never silently absent; with the ``status`` column
   (the shared contract) its status is rated | provisional | disconnected | unplaced, ``status_reason`` is
   empty exactly when rated, and an agent that is not rated has no rank.
4. Every rated benchmark has its report and explorer. The nightly rule asserts the nightly job succeeds on
   every benchmark. At the end of every example (and after every step in the deep profile) the warehouse
   equals a clean run: a copy of ``raw/``, ``incoming/`` and ``judgments/`` rated from scratch on a fresh
   instance gives the same bytes for every per-benchmark output table.

Profiles: the bounded one runs in the default test run (one example of a few steps, derandomized, no
example database, no shrinking: each step costs a pipeline run); the deep one (``@pytest.mark.slow``) runs more
examples of more steps, lm-eval logs included, and compares with a clean run after every step::

    .venv/bin/python -m pytest tests/pipeline/test_state_machine.py -m slow -p no:cacheprovider

Replaying a failure: hypothesis prints the failing steps as a program (``state = PipelineMachine(...)``,
``state.upload_full(...)``, …) that reproduces it when pasted into a test, and with ``print_blob=True`` a
``@reproduce_failure(...)`` line; the first line of the failure names the profile's seed, e.g.
``state machine: profile deep, seed 1234``: ``AGIELO_SM_SEED=1234 pytest … -m slow`` runs that sequence again
(``AGIELO_SM_SEED`` overrides either profile's fixed seed, ``AGIELO_SM_SEED=random`` draws a new one to explore
new sequences; ``AGIELO_SM_EXAMPLES`` and ``AGIELO_SM_STEPS``
override the profile's sizes, ``AGIELO_SM_VERBOSE=1`` prints each example's steps, with ``-s``).

Seams whose fixes belong to other branches are skipped while named in :data:`PENDING_SEAMS`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from agielo_dagster.assets.quarantine import read_quarantine
from agielo_dagster.resources.storage import ObjectStorage
from hypothesis import HealthCheck, Phase, Verbosity, note, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from agielo_dagster.cli import RunSummary, print_summary
from agielo_dagster.definitions import defs
from agielo_dagster.domain.harness import drops_of
from agielo_dagster.domain.incoming import read_incoming
from agielo_dagster.domain.inputs import present_benchmarks
from agielo_dagster.domain.layout import explorer_path, report_path, warehouse_path
from agielo_dagster.domain.ledger import read_ledger
from agielo_dagster.domain.listing import input_files

from ..harness.conftest import lm_eval_logs  # noqa: F401, F811  (the real lm-eval logs: a fixture of the deep profile)
from .conftest import BENCHMARK_OUTPUTS, QUIET, Daemon, failures

# Seams fixed on other branches of issue 21; the lead clears each name when its branch merges:
# - disconnected_upload, partial_upload_of_unknown_ids: h/seams-comp (components, `status` in agent_ratings)
# - bad_judgments: h/seams-input (the judgments contract: a named rule, not a failed step)
PENDING_SEAMS: frozenset[str] = frozenset()

DATA = Path(__file__).resolve().parents[1] / "data"
BENCHMARK = "quiz"
TEST_CASES = [f"t{i:03d}" for i in range(24)]
AGENTS = ["a0", "a1", "a2", "a3", "a4"]
STATUSES = {"rated", "provisional", "disconnected", "unplaced"}
SPECS = {
    "identity": "metric: correct\nscoring: identity\n",
    "binary": "metric: correct\nscoring: binary\nparams: {threshold: 0.5}\n",
    "minmax": "metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 10}\n",
    "lower_is_better": "metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 1, higher_is_better: false}\n",
    "extreme": "metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 1.0e+300}\n",
}
NIGHTLY = {**QUIET, "ops": {"rating_uncertainty": {"config": {"resamples": 10}}}}
# the steps of a rating run after the ledger, in the order it runs them: each materializes its outputs together
_REPOSITORY = defs.get_repository_def()
STEPS = list(dict.fromkeys(_REPOSITORY.assets_defs_by_key[dg.AssetKey(n)] for n in BENCHMARK_OUTPUTS))
KILL_POINTS = list(range(1, len(STEPS)))  # steps 1..k done by the killed run, the rest not started


def _write(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix == ".jsonl":
        path.write_text(frame.to_json(orient="records", lines=True))
    else:
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        path.write_text(buffer.getvalue())


def _output_tables(root: Path) -> dict[str, bytes]:
    top = root / "warehouse"
    return {f"{asset}/{p.name}": p.read_bytes() for asset in BENCHMARK_OUTPUTS for p in sorted((top / asset).glob("*.parquet"))}


# a clean run is a function of its inputs: the output tables of each set of inputs already rated from scratch (the
# examples start alike, and a sensor tick or the nightly job changes no input)
_CLEAN_RUNS: dict[str, dict[str, bytes]] = {}


def _inputs_digest(root: Path) -> str:
    """Every input's path, modification time (uploads are versioned by it) and bytes, and every folder's path."""
    digest = hashlib.sha256()
    for top in ("raw", "incoming", "judgments"):
        for path in sorted((root / top).rglob("*")):
            digest.update(f"{path.relative_to(root)}\0".encode())
            if path.is_file():
                digest.update(f"{path.stat().st_mtime_ns}\0".encode() + path.read_bytes())
    return digest.hexdigest()


class PipelineMachine(RuleBasedStateMachine):
    """See the module docstring: rules are user actions, invariants hold after every settled step."""

    lm_eval_logs: Path | None = None
    clean_run_every_step = False

    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="agielo_sm_"))
        self.root = self.tmp / "storage"
        (self.root / "raw" / BENCHMARK).mkdir(parents=True)
        self._instance_cm = dg.instance_for_test()
        self.daemon = Daemon(ObjectStorage(root=str(self.root)), self._instance_cm.__enter__())
        self.judgment_cursor: str | None = None
        self.step_runs: list[dg.ExecuteInProcessResult] = []
        self.last_check: dict[str, dict] = {}  # benchmark → metadata of its last uploads_accepted evaluation
        self.rng = np.random.default_rng(0)
        self.difficulty = dict(zip(TEST_CASES, np.random.default_rng(7).normal(0, 1, len(TEST_CASES)), strict=True))
        (self.root / "raw" / BENCHMARK / "benchmark.yaml").write_text(SPECS["identity"])
        for i, agent in enumerate(AGENTS[:3]):
            _write(self.raw(f"{agent}.csv"), self.results(TEST_CASES, -1.0 + i))
        self.history: list[str] = []
        self.settle()
        assert BENCHMARK in self.last_check, "the uploads_accepted check did not run"

    # ---- helpers ---------------------------------------------------------------------------------------------
    def raw(self, name: str) -> Path:
        return self.root / "raw" / BENCHMARK / name

    def results(self, ids, strength: float) -> pd.DataFrame:
        """Graded results in 0..1 (in range of every spec of SPECS) of an agent of this strength."""
        p = np.array([1 / (1 + np.exp(self.difficulty.get(i, 0.0) - strength)) for i in ids])
        return pd.DataFrame({"test_case_id": list(ids), "correct": np.clip(p + self.rng.normal(0, 0.1, len(p)), 0, 1).round(3)})

    def remove_agent(self, agent: str) -> None:
        for ext in ("csv", "jsonl", "parquet"):
            self.raw(f"{agent}.{ext}").unlink(missing_ok=True)

    def settle(self) -> None:
        self.history.append(sys._getframe(1).f_code.co_name)  # the rule that settles
        runs = self.daemon.settle(max_ticks=8)
        self.judgment_tick()
        self.step_runs += runs
        for run in runs:
            for evaluation in run.get_asset_check_evaluations():
                benchmark = evaluation.metadata.get("benchmark")
                if benchmark is not None and evaluation.check_name == "uploads_accepted":
                    self.last_check[benchmark.value] = {k: v.value for k, v in evaluation.metadata.items()}
        failed = [f for run in runs for f in failures(run)]
        assert not failed, f"a step failed: {failed}"

    def judgment_tick(self) -> None:
        from agielo_dagster.sensors import judgments_sensor

        context = dg.build_sensor_context(
            instance=self.daemon.instance,
            cursor=self.judgment_cursor,
            resources={"storage": self.daemon.storage},
            definitions=self.daemon.defs,
        )
        result = judgments_sensor(context)
        self.judgment_cursor = result.cursor
        for request in result.dynamic_partitions_requests or []:
            self.daemon.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        job = self.daemon.defs.resolve_job_def("rank_judgments")
        for request in result.run_requests or []:
            run = job.execute_in_process(
                run_config=QUIET, instance=self.daemon.instance, partition_key=request.partition_key, raise_on_error=False
            )
            self.step_runs.append(run)

    def summary(self) -> str:
        out = io.StringIO()
        print_summary(self.daemon.storage.store, RunSummary(), out=out)
        return out.getvalue()

    # ---- rules: the daemon ----------------------------------------------------------------------------------
    @rule()
    def another_sensor_tick(self):
        """Settled means settled: the next tick requests nothing (no run repeats on unchanged inputs).

        Without arguments it is also the simplest rule: hypothesis's first example repeats it, cheaply."""
        self.history.append("another_sensor_tick")
        requests = self.daemon.sensor_tick(execute=False).run_requests
        assert not requests, f"runs requested on settled inputs: {[r.partition_key for r in requests]}"

    # ---- rules: uploads ----------------------------------------------------------------------------------------
    @rule(agent=st.sampled_from(AGENTS), ext=st.sampled_from(["csv", "jsonl", "parquet"]), strength=st.floats(-2, 2))
    def upload_full(self, agent, ext, strength):
        self.remove_agent(agent)
        _write(self.raw(f"{agent}.{ext}"), self.results(TEST_CASES, strength))
        self.settle()

    @rule(agent=st.sampled_from(AGENTS), ext=st.sampled_from(["csv", "parquet"]))
    def second_file_of_an_agent(self, agent, ext):
        """Two files of one agent: both refused by one_file_per_agent, until one goes."""
        other = "jsonl" if self.raw(f"{agent}.csv").exists() or self.raw(f"{agent}.parquet").exists() else "csv"
        _write(self.raw(f"{agent}.{other}"), self.results(TEST_CASES, 0.0))
        if not any(self.raw(f"{agent}.{e}").exists() for e in ("csv", "parquet") if e != other):
            _write(self.raw(f"{agent}.{ext}"), self.results(TEST_CASES, 0.5))
        self.settle()

    @rule(agent=st.sampled_from(AGENTS))
    def delete_upload(self, agent):
        self.remove_agent(agent)
        self.settle()

    @rule(agent=st.sampled_from(["new0", "new1"]), budget=st.integers(3, 8))
    def partial_upload_from_a_plan(self, agent, budget):
        """`agielo plan`, then the results on exactly its test cases: a provisional agent."""
        if not (self.root / "warehouse/test_case_ratings" / f"{BENCHMARK}.parquet").exists():
            self.history.append("partial_upload_from_a_plan (nothing rated yet)")
            return  # nothing rated yet: `agielo plan` says so (a failure by design, tested elsewhere)
        config = {**QUIET, "ops": {"placement_plans": {"config": {"agent": agent, "budget": budget}}}}
        job = self.daemon.defs.resolve_job_def("plan_placement")
        run = job.execute_in_process(
            run_config=config, instance=self.daemon.instance, partition_key=BENCHMARK, raise_on_error=False
        )
        assert run.success, failures(run)
        plan = pd.read_csv(self.root / "plans" / BENCHMARK / f"{agent}.csv")
        self.remove_agent(agent)
        _write(self.raw(f"{agent}.csv"), self.results(plan["test_case_id"].astype(str), 0.3))
        self.settle()

    @rule(
        agent=st.sampled_from(["new0", "new1"]), ids=st.lists(st.sampled_from(TEST_CASES), min_size=1, max_size=10, unique=True)
    )
    def partial_upload_of_any_subset(self, agent, ids):
        self.remove_agent(agent)
        _write(self.raw(f"{agent}.csv"), self.results(ids, 0.0))
        self.settle()

    @precondition(lambda self: "disconnected_upload" not in PENDING_SEAMS)
    @rule()
    def disconnected_upload(self):
        """A typo'd prefix: T000… where the benchmark's test cases are t000…; as many rows as a full upload."""
        self.remove_agent("typo")
        _write(self.raw("typo.csv"), self.results(TEST_CASES, 1.0).assign(test_case_id=[i.upper() for i in TEST_CASES]))
        self.settle()

    @precondition(lambda self: "partial_upload_of_unknown_ids" not in PENDING_SEAMS)
    @rule(rows=st.integers(1, 6))
    def partial_upload_of_unknown_ids(self, rows):
        self.remove_agent("stray")
        _write(self.raw("stray.csv"), self.results([f"zz{i}" for i in range(rows)], 0.0))
        self.settle()

    @rule(agent=st.sampled_from(AGENTS), value=st.sampled_from([1.0e300, -1.0, 1.5, 5e-324]))
    def upload_with_extreme_values(self, agent, value):
        """In range only for some specs: accepted, or rejected by metric_in_range; never a failed step."""
        self.remove_agent(agent)
        _write(self.raw(f"{agent}.csv"), self.results(TEST_CASES, 0.0).assign(correct=value))
        self.settle()

    # ---- rules: tags and benchmark.yaml ------------------------------------------------------------------------
    @rule(kind=st.sampled_from(["good", "bad", "unknown", "none"]))
    def tag_file(self, kind):
        path = self.raw("test_cases.csv")
        if kind == "none":
            path.unlink(missing_ok=True)
        elif kind == "good":
            _write(path, pd.DataFrame({"test_case_id": TEST_CASES, "subject": ["math", "code"] * 12}))
        elif kind == "bad":
            path.write_text("test_case_id,abilities\nt000,algebra;;geometry\nt000,logic\n")
        else:
            _write(path, pd.DataFrame({"test_case_id": [f"Q{i}" for i in range(20)], "subject": ["math"] * 20}))
        self.settle()

    @rule(spec=st.sampled_from(sorted(SPECS)))
    def change_benchmark_yaml(self, spec):
        self.raw("benchmark.yaml").write_text(SPECS[spec])
        self.settle()

    # ---- rules: harness logs ---------------------------------------------------------------------------------
    @rule(change=st.sampled_from(["add", "truncate", "remove"]))
    def every_eval_ever_log(self, change):
        target = self.root / "incoming/eee"
        if change == "add":
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(DATA / "harness/eee", target)
        elif change == "truncate" and target.exists():
            samples = sorted(target.rglob("*_samples.jsonl"))[0]
            text = samples.read_text()
            samples.write_text(text[: len(text) - 25])  # the last line cut off: eee_truncated
        elif change == "remove":
            shutil.rmtree(target, ignore_errors=True)
        self.settle()

    @precondition(lambda self: self.lm_eval_logs is not None)
    @rule(run=st.sampled_from(["run1", "run2"]), change=st.sampled_from(["add", "remove"]))
    def lm_eval_log(self, run, change):
        target = self.root / "incoming/lm-eval" / run
        shutil.rmtree(target, ignore_errors=True)
        if change == "add":
            shutil.copytree(self.lm_eval_logs / run, target)
        self.settle()

    # ---- rules: judgments ------------------------------------------------------------------------------------
    @rule(name=st.sampled_from(["study", "panel"]))
    def good_judgments(self, name):
        folder = self.root / "judgments"
        folder.mkdir(exist_ok=True)
        pd.DataFrame(
            {"item_a": ["t000", "t001", "t000"], "item_b": ["t001", "t002", "t002"], "winner": ["a", "a", "tie"]}
        ).to_csv(folder / f"{name}.csv", index=False)
        self.settle()

    @precondition(lambda self: "bad_judgments" not in PENDING_SEAMS)
    @rule(problem=st.sampled_from(["inf_weight", "negative_weight", "empty_item", "bad_winner"]))
    def bad_judgments(self, problem):
        rows = {"item_a": ["t000", "t001"], "item_b": ["t001", "t002"], "winner": ["a", "b"], "weight": [1.0, 1.0]}
        if problem == "inf_weight":
            rows["weight"][0] = float("inf")
        elif problem == "negative_weight":
            rows["weight"][1] = -1.0
        elif problem == "empty_item":
            rows["item_a"][0] = ""
        else:
            rows["winner"][0] = "maybe"
        folder = self.root / "judgments"
        folder.mkdir(exist_ok=True)
        pd.DataFrame(rows).to_csv(folder / "bad.csv", index=False)
        self.settle()

    # ---- rules: nightly, kills -------------------------------------------------------------------------------
    @rule()
    def nightly(self):
        job = self.daemon.defs.resolve_job_def("rate_benchmarks_nightly")
        for benchmark in sorted(self.daemon.instance.get_dynamic_partitions("benchmarks")):
            run = job.execute_in_process(
                run_config=NIGHTLY, instance=self.daemon.instance, partition_key=benchmark, raise_on_error=False
            )
            self.step_runs.append(run)
            assert run.success, f"the nightly job failed on {benchmark}: {failures(run)}"
        self.settle()

    @rule(agent=st.sampled_from(AGENTS[:3]), point=st.sampled_from(KILL_POINTS))
    def kill_between_two_steps(self, agent, point):
        """A run of a new upload killed after its first ``point`` steps: their outputs written and recorded, the later
        ones left as the run before left them; and a leftover temporary file. The next settle must heal it."""
        self.remove_agent(agent)
        _write(self.raw(f"{agent}.csv"), self.results(TEST_CASES, float(self.rng.normal(0, 1))))
        self.daemon.sensor_tick(execute=False)  # the upload observed; the run the sensor asks for is the killed one
        done = [dg.AssetKey("upload_ledger"), *(key for step in STEPS[:point] for key in step.keys)]
        job = self.daemon.defs.resolve_job_def("rate_benchmarks")
        run = job.execute_in_process(
            run_config=QUIET, instance=self.daemon.instance, partition_key=BENCHMARK, asset_selection=done, raise_on_error=False
        )
        self.step_runs.append(run)  # the run that will have been killed (it must not fail either)
        leftover = self.root / "warehouse/agent_ratings" / f".{BENCHMARK}.parquet.0123456789abcdef.tmp"
        if leftover.parent.exists():
            leftover.write_bytes(b"half a parquet file")
            os.utime(leftover, (time.time() - 3600,) * 2)
        note(f"killed after {[k.to_user_string() for k in done]}")
        self.settle()  # heals

    # ---- invariants ------------------------------------------------------------------------------------------
    @invariant()
    def no_step_failed(self):
        failed = [f for run in self.step_runs for f in failures(run)]
        self.step_runs = []
        assert not failed, f"a step failed: {failed}"
        assert "FAILED" not in self.summary()

    @invariant()
    def every_file_has_one_ledger_outcome(self):
        store = self.daemon.storage.store
        quarantine = read_quarantine(store)
        summary = self.summary()
        for benchmark in sorted(present_benchmarks(store)):
            ledger = read_ledger(store, benchmark)
            assert ledger is not None, f"{benchmark} has no ledger"
            paths = [r["path"] for r in ledger.rows]
            assert len(paths) == len(set(paths)), f"{benchmark}: a file with two ledger rows"
            inputs = {f.path for f in input_files(store, benchmark) if not f.path.endswith("/benchmark.yaml")}
            assert set(paths) == inputs, (
                f"{benchmark}: files without an outcome {inputs - set(paths)}, rows of no file {set(paths) - inputs}"
            )
            assert {r["status"] for r in ledger.rows} <= {"accepted", "rejected", "refused", "skipped"}
            for r in ledger.problems:
                assert r["rule"] and r["message"], r
                assert r["path"] in set(quarantine["file"]), f"{r['path']} ({r['rule']}) is not in the quarantine report"
                assert r["message"] in summary, f"{r['path']} ({r['rule']}) is not in the CLI summary"
            check = self.last_check.get(benchmark)
            if check is not None:
                assert check["rejected_or_refused"] == len(ledger.problems), (benchmark, check, len(ledger.problems))
        # every file under incoming/ belongs to exactly one recorded drop; its errors are in the quarantine report
        listing = [f.path for f in store.list_files("incoming")]
        drops = drops_of(listing)
        owned = [p for paths in drops.values() for p in paths]
        assert sorted(owned) == sorted(set(owned)) and set(owned) == set(listing)
        records = {(r["harness"], r["drop"]) for r in read_incoming(store)}
        assert records == {(d.harness, d.drop) for d in drops}, (records, drops)
        for r in read_incoming(store):
            for error in json.loads(r["errors"]):
                assert error["file"] in set(quarantine["file"]), error
        # every judgment set has its outcome: scores, or a named rule
        for path in sorted((self.root / "judgments").glob("*.csv")) if (self.root / "judgments").exists() else []:
            # a rejected set's scores are emptied until the file is fixed: scored means a non-empty table
            scores = self.root / "warehouse/difficulty_judgments" / f"{path.stem}.parquet"
            scored = scores.exists() and pq.read_metadata(scores).num_rows > 0
            named = f"judgments/{path.name}" in set(quarantine["file"])
            if path.stem == "bad" and "bad_judgments" in PENDING_SEAMS:
                continue
            assert scored != named, f"judgments/{path.name}: scored {scored}, named {named}"

    @invariant()
    def every_accepted_agent_is_in_agent_ratings(self):
        store = self.daemon.storage.store
        for benchmark in sorted(present_benchmarks(store)):
            ledger = read_ledger(store, benchmark)
            accepted = {r["agent"] for r in ledger.accepted} if ledger else set()
            path = self.root / warehouse_path("agent_ratings", benchmark)
            if not accepted:
                assert not path.exists(), f"{benchmark}: ratings shown without an accepted upload"
                continue
            agents = pd.read_parquet(path).astype({"agent_id": str}).set_index("agent_id")
            missing = accepted - set(agents.index)
            if "partial_upload_of_unknown_ids" in PENDING_SEAMS:
                missing -= {"stray"}
            assert not missing, f"{benchmark}: accepted but not in agent_ratings: {sorted(missing)}"
            if "status" in agents.columns:
                assert set(agents["status"]) <= STATUSES, set(agents["status"])
                rated = agents["status"] == "rated"
                assert (agents.loc[rated, "status_reason"] == "").all()
                assert (agents.loc[~rated, "status_reason"].str.len() > 0).all()
                assert agents.loc[~rated, "rank"].isna().all(), "an agent that is not rated has a rank"
            assert (self.root / report_path(benchmark)).exists(), f"{benchmark} has no report"
            assert (self.root / explorer_path(benchmark)).exists(), f"{benchmark} has no explorer"

    @invariant()
    def equals_a_clean_run_when_asked(self):
        if self.clean_run_every_step:
            self.assert_equals_a_clean_run()

    def assert_equals_a_clean_run(self):
        inputs = _inputs_digest(self.root)
        if inputs not in _CLEAN_RUNS:
            fresh = self.tmp / f"clean_{time.monotonic_ns()}"
            for top in ("raw", "incoming", "judgments"):
                if (self.root / top).exists():
                    shutil.copytree(self.root / top, fresh / top)
            with dg.instance_for_test() as instance:
                clean = Daemon(ObjectStorage(root=str(fresh)), instance)
                runs = clean.settle(max_ticks=8)
                assert all(r.success for r in runs), [f for r in runs for f in failures(r)]
            _CLEAN_RUNS[inputs] = _output_tables(fresh)
            shutil.rmtree(fresh, ignore_errors=True)
        mine, theirs = _output_tables(self.root), _CLEAN_RUNS[inputs]
        assert sorted(mine) == sorted(theirs), f"tables differ from a clean run's: {sorted(set(mine) ^ set(theirs))}"
        differ = [name for name in mine if mine[name] != theirs[name]]
        assert not differ, f"tables differ from a clean run's: {differ}"

    def teardown(self):
        try:
            if set(self.history) - {"__init__", "another_sensor_tick"}:  # else nothing but the initial settle to compare
                self.assert_equals_a_clean_run()
        finally:
            if os.environ.get("AGIELO_SM_VERBOSE"):
                print(f"state machine steps: {self.history}")
            self._instance_cm.__exit__(None, None, None)
            shutil.rmtree(self.tmp, ignore_errors=True)


PROFILES = {
    # two examples of 5 steps: hypothesis's first is its simplest (another_sensor_tick, cheap); the seed was chosen (by
    # drawing sequences without running them: the rules' bodies stubbed) so that the second is: a kill, a plan's partial
    # upload, the nightly job, a benchmark.yaml change and a judgment set breaking its contract
    "bounded": dict(max_examples=2, stateful_step_count=5, seed=20261800),
    # a clean run after every step doubles each step's cost: about 10 s a step unloaded, 30 s on a loaded machine; a
    # step that changes no input (a sensor tick, the nightly job, removing what is not there) reuses the clean run of
    # those inputs (_CLEAN_RUNS): 3 x 8 steps take about 160 s unloaded (11 of 29 clean runs made). Its seed is fixed so
    # that a test run is repeatable;
    # AGIELO_SM_SEED=random explores new sequences (the seed is printed with any failure)
    "deep": dict(max_examples=3, stateful_step_count=8, seed=20261124),
}


def run_profile(name: str, logs: Path | None = None, every_step: bool = False) -> None:
    profile = PROFILES[name]
    asked = os.environ.get("AGIELO_SM_SEED") or profile["seed"]
    chosen = np.random.SeedSequence().entropy % 2**32 if asked == "random" else int(asked)
    machine = seed(chosen)(
        type(f"PipelineMachine_{name}", (PipelineMachine,), {"lm_eval_logs": logs, "clean_run_every_step": every_step})
    )
    config = settings(
        max_examples=int(os.environ.get("AGIELO_SM_EXAMPLES") or profile["max_examples"]),
        stateful_step_count=int(os.environ.get("AGIELO_SM_STEPS") or profile["stateful_step_count"]),
        verbosity=Verbosity.verbose if os.environ.get("AGIELO_SM_VERBOSE") else Verbosity.normal,
        deadline=None,
        database=None,
        print_blob=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: every step is a pipeline run
        suppress_health_check=list(HealthCheck),
    )
    try:
        run_state_machine_as_test(machine, settings=config)
    except BaseException as exc:
        exc.add_note(f"state machine: profile {name}, seed {chosen}: replay with AGIELO_SM_SEED={chosen}")
        raise


def test_the_pipeline_state_machine_bounded():
    run_profile("bounded")


@pytest.mark.slow
def test_the_pipeline_state_machine_deep(lm_eval_logs):  # noqa: F811 - the fixture imported above
    run_profile("deep", logs=lm_eval_logs, every_step=True)
