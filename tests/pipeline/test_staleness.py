"""Dagster's own view is true: what the UI shows as stale (its GraphQL API, as the asset graph and the partitions
page show it) is exactly what changed, and is what the sensor and ``agielo run`` act on.

A webserver without a daemon over an instance and a storage root that ``agielo run`` rated (two benchmarks), its code
location loaded from a copy of the package (so that its code can change):

- rated: nothing is stale (the nightly estimators are missing: they have not run yet);
- an upload lands in one benchmark and is observed (the sensor's observation, recorded as the daemon records it):
  that benchmark's ledger alone is stale, no other benchmark's partition;
- a presentation module changes (the code location reloaded): the report of each benchmark alone is stale;
- ``agielo run``, then the nightly job launched by hand (``dg launch``): nothing is stale.

At each step the UI's answer equals ``agielo_dagster.freshness``'s, for every asset and partition.
"""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from ..devserver import Webserver
from .conftest import Daemon, write_benchmark, write_log
from .test_code_versions import edit, package_copy

pytestmark = [
    pytest.mark.component("dagster"),
    pytest.mark.slow,
]  # a webserver and six runs: about 70 s (quick: test_code_versions)

BENCHMARKS = ("quiz", "vision")
NODES = (
    "{ assetNodes { assetKey { path } isObservable partitionDefinition { dimensionTypes { dynamicPartitionsDefinitionName } } } }"
)


def ui_staleness(server: Webserver) -> dict[tuple[str, str | None], str]:
    """{(asset, partition): FRESH | STALE | MISSING} as the UI shows it, for every asset that is not an observed source:
    per benchmark, or whole (the judgment sets' asset has no set here)."""
    asked = []
    for node in server.graphql(NODES)["data"]["assetNodes"]:
        name = "/".join(node["assetKey"]["path"])
        dimensions = [
            d["dynamicPartitionsDefinitionName"] for d in (node["partitionDefinition"] or {}).get("dimensionTypes") or []
        ]
        if not node["isObservable"] and name != "difficulty_judgments":
            asked.append((name, list(BENCHMARKS) if dimensions == ["benchmarks"] else [None]))
    fields = []
    for i, (name, partitions) in enumerate(asked):
        statuses = " ".join(
            f'p{j}: staleStatus(partition: "{p}")' if p else f"p{j}: staleStatus" for j, p in enumerate(partitions)
        )
        fields.append(f'a{i}: assetNodes(assetKeys: [{{path: ["{name}"]}}]) {{ {statuses} }}')
    answer = server.graphql("{ " + " ".join(fields) + " }")
    assert "errors" not in answer, answer["errors"]
    return {
        (name, p): answer["data"][f"a{i}"][0][f"p{j}"]
        for i, (name, partitions) in enumerate(asked)
        for j, p in enumerate(partitions)
    }


def our_staleness(home: Path, code: Path) -> dict[tuple[str, str | None], str]:
    """The same, from ``agielo_dagster.freshness`` with the code location's definitions (the copy's)."""
    script = (
        "import json, sys, dagster as dg\n"
        "from agielo_dagster.definitions import defs\n"
        "from agielo_dagster.freshness import why_stale\n"
        "from agielo_dagster.pending import assets_defs_of, graph_of\n"
        "graph = graph_of(assets_defs_of(defs))\n"
        "out = {}\n"
        "with dg.DagsterInstance.get() as instance:\n"
        "    for spec in defs.resolve_all_asset_specs():\n"
        "        if spec.key in graph.sources or spec.key.to_user_string() == 'difficulty_judgments': continue\n"
        "        for p in ([None] if spec.partitions_def is None else sys.argv[1:]):\n"
        "            why = why_stale(instance, graph, spec.key, p)\n"
        "            out[f'{spec.key.to_user_string()}|{p or \"\"}'] = 'FRESH' if not why else 'MISSING' if why == 'missing' else 'STALE'\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, "-c", script, *BENCHMARKS], cwd=code, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    return {(k.split("|")[0], k.split("|")[1] or None): v for k, v in json.loads(out.stdout.splitlines()[-1]).items()}


def run(command: list[str], home: Path, root: Path, code: Path) -> str:
    """A command over the instance and the root, with the copy's code (``dg`` from the project root, as README's)."""
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "AGIELO_STORAGE": str(root),
        "PYTHONPATH": str(code),
        "VIRTUAL_ENV": sys.prefix,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    out = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout + out.stderr


def stale(view: dict) -> set:
    return {key for key, status in view.items() if status == "STALE"}


def test_the_ui_shows_exactly_what_changed_as_stale(tmp_path):
    home, root = tmp_path / "home", tmp_path / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    for seed, benchmark in enumerate(BENCHMARKS):
        write_benchmark(root, benchmark, [1300.0, 1600.0, 1900.0], test_cases=20, seed=seed)
    code = package_copy(tmp_path)
    agielo = [sys.executable, "-m", "agielo_dagster.cli", "run"]
    assert "rated 2 benchmark(s)" in run(agielo, home, root, code)
    server = Webserver(home, root, tmp_path / "webserver.log")
    server.env["PYTHONPATH"], server.cwd = str(code), code
    server.start()
    try:
        view = ui_staleness(server)
        assert stale(view) == set() and view == our_staleness(home, code)
        nightly = {k for k, v in view.items() if v == "MISSING"}
        assert {name for name, _ in nightly} == {
            "estimator_comparison",  # the nightly estimators: not run yet
            "rating_uncertainty",
            "reliability_heldout",
            "placement_plans",  # on demand
            "harness_uploads",  # no harness logs
        }

        # an upload lands in quiz, and the sensor observes it: quiz's ledger is stale, nothing of vision
        log = write_log(root, "quiz", "newcomer", pd.read_csv(root / "raw/quiz/agent_1.csv"))
        os.utime(log, (log.stat().st_atime - 5, log.stat().st_mtime - 5))  # settled: the sensor looks at it now
        with dg.DagsterInstance.from_config(str(home)) as instance:
            Daemon(ObjectStorage(root=str(root)), instance).sensor_tick(execute=False)
        view = ui_staleness(server)
        assert stale(view) == {("upload_ledger", "quiz")} and view == our_staleness(home, code)

        out = run(agielo, home, root, code)
        assert "rated 1 benchmark(s)" in out and "ingested 1 upload(s)" in out
        assert stale(ui_staleness(server)) == set()

        # a presentation module changes: the reports alone are stale (the leaderboard's pages share its pieces)
        edit(code, "domain/report.py")
        server.reload()
        view = ui_staleness(server)
        reports = {("benchmark_reports", b) for b in BENCHMARKS} | {("leaderboard_pages", None)}
        assert stale(view) == reports and view == our_staleness(home, code)

        assert "rated 2 benchmark(s)" in run(agielo, home, root, code)  # re-rendered, not re-rated
        dg_launch = [str(Path(sys.executable).with_name("dg")), "launch", "--job", "rate_benchmarks_nightly"]
        for benchmark in BENCHMARKS:
            assert "RUN_SUCCESS" in run([*dg_launch, "--partition", benchmark], home, root, code)
        view = ui_staleness(server)
        assert stale(view) == set() and view == our_staleness(home, code)
        missing = {k for k, v in view.items() if v == "MISSING"}
        assert missing == {("placement_plans", b) for b in BENCHMARKS} | {("harness_uploads", None)}
    finally:
        server.stop()
