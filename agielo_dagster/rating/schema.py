"""The tables' columns, named once: the match table the engine reads, and every column an output table writes.

Each :class:`Column` has its name, its type and a description; the pipeline shows the descriptions in
Dagster's column schema of each output (``dagster/column_schema``). A name means the same in every table,
unless :data:`BY_TABLE` says otherwise for one table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BY_TABLE", "COLUMNS", "MATCH_COLUMNS", "MATCH_TABLE", "Column", "describe"]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # the arrow type name: string, float64, int64, bool
    description: str


MATCH_TABLE = (
    Column("test_case_id", "string", "The test case's id, as the upload names it."),
    Column("agent_id", "string", "The agent's id: the upload's file name (or the harness's model, made safe)."),
    Column("metric", "float64", "The raw metric M of the match, as uploaded (accuracy, AP, error, ...)."),
    Column(
        "score",
        "float64",
        "The agent's match score S = f(M) in [0, 1] under the benchmark's scoring; the test case scores 1 - S.",
    ),
)
MATCH_COLUMNS = tuple(c.name for c in MATCH_TABLE)

_OUTPUTS = (
    Column("source_path", "string", "The upload (a file under raw/ or warehouse/derived/) the row came from."),
    Column("source_version", "string", "The storage version of that upload when it was read."),
    Column("spec_version", "string", "A hash of the benchmark.yaml the upload was scored with."),
    Column(
        "mu",
        "float64",
        "The rating on the Elo scale, as the benchmark's model fits it: an agent's competency, a test case's difficulty; "
        "E[S] = 1 / (1 + 10^((mu_test_case - mu_agent) / 400)).",
    ),
    Column(
        "sigma",
        "float64",
        "The rating's uncertainty (Elo): an agent's standard error against the mean of its component's agents, a test "
        "case's posterior sd (model glicko: sigma of the mixture of the orders' posteriors).",
    ),
    Column(
        "discrimination",
        "float64",
        "How sharply the test case separates stronger agents from weaker ones: 1 typical, 0 results that do not follow "
        "the ratings, below 0 stronger agents doing worse (model 2pl: its own; else fitted per test case, agents fixed).",
    ),
    Column("discrimination_lo", "float64", "The lower end of the discrimination's interval at the run's level."),
    Column("discrimination_hi", "float64", "The upper end of the discrimination's interval at the run's level."),
    Column(
        "flag",
        "string",
        "likely_mislabeled (discrimination below 0 with probability above the run's level), saturated (every agent "
        "scores 1), unsolved (every agent scores 0), uninformative (interval includes 0 where agents would tell), or empty.",
    ),
    Column("flag_reason", "string", "Why the test case has its flag, in words to check; or why it could not be judged."),
    Column("matches", "int64", "How many matches the row counts."),
    Column("mean_score", "float64", "The mean match score S of the row's matches (agent's view)."),
    Column("mean_metric", "float64", "The mean raw metric M of the row's matches."),
    Column("mu_order_sd", "float64", "Model glicko: the spread of one order's rating across the orders (NaN with one order)."),
    Column("mu_lo", "float64", "The lower end of the rating's interval at the run's level (asymmetric: the likelihood's shape)."),
    Column("mu_hi", "float64", "The upper end of the rating's interval at the run's level (farther out for a perfect score)."),
    Column("rank", "float64", "The agent's rank among the rated agents (1 = best); empty for agents not ranked."),
    Column("rank_lo", "float64", "The best rank the rating's interval allows."),
    Column("rank_hi", "float64", "The worst rank the rating's interval allows."),
    Column("component", "int64", "The connected component of the match graph (0 = the largest): ratings compare within one."),
    Column("provisional", "bool", "True for an agent placed from a partial upload against frozen test-case ratings."),
    Column("status", "string", "rated, provisional, disconnected or unplaced (agents); accepted, rejected, ... (uploads)."),
    Column("status_reason", "string", "Why the row has its status: empty for rated, a short sentence otherwise."),
    Column("fraction", "float64", "The share of the matches played when the row was taken."),
    Column("kind", "string", "What the row is about: agent or test_case (snapshots); the file's role (uploads)."),
    Column("id", "string", "The agent's or test case's id."),
    Column("rating", "float64", "The agent's rating mu, as the gaps were computed from."),
    Column("hardest_test_case_rating", "float64", "The rating of the benchmark's hardest test case."),
    Column("expected_score_on_hardest", "float64", "The agent's expected score S on the hardest test case."),
    Column(
        "expected_metric_on_hardest", "float64", "f^-1 of that score: the agent's expected raw metric on the hardest test case."
    ),
    Column("assumed_metric_lo", "float64", "The lower end of the metric range the scoring declares (NaN for binary)."),
    Column("assumed_metric_hi", "float64", "The upper end of the metric range the scoring declares (NaN for binary)."),
    Column("range_warning", "string", "Set when the declared range is far wider than the matches span: gaps shrink."),
    Column("inputs_digest", "string", "A fingerprint of the inputs the output was computed from."),
    Column("code_version", "string", "The version of the code that computed the output."),
    Column(
        "rho_test_cases",
        "float64",
        "Spearman correlation of test-case ratings with their mean metric: negative where higher is better, positive where lower is.",
    ),
    Column(
        "rho_agents",
        "float64",
        "Spearman correlation of agent ratings with their mean metric: positive where higher is better, negative where lower is.",
    ),
    Column("mae", "float64", "Mean absolute error of expected against observed scores, over rating-difference bins."),
    Column("mse", "float64", "Mean squared error of expected against observed scores, over the same bins."),
    Column("matches_outside_bins", "int64", "Matches whose rating difference falls outside the calibration bins."),
    Column("orders", "int64", "How many orders of the matches were played."),
    Column("mae_twin", "float64", "The mean calibration MAE of twins simulated from the fitted model (the yardstick)."),
    Column("mae_twin_hi", "float64", "The twins' 95 % upper quantile of that MAE."),
    Column("miscalibration_visible", "bool", "mae > mae_twin_hi: the model misfits beyond what chance explains."),
    Column("tag", "string", "The tag column of test_cases.csv the slice is cut by."),
    Column("value", "string", "The slice: the tag's value (one ability of a multi-valued tag)."),
    Column("overall_mu", "float64", "The agent's rating on the whole benchmark."),
    Column("delta", "float64", "The slice rating minus the overall rating: above 0, stronger on this slice."),
    Column("test_cases", "int64", "How many test cases the slice has."),
    Column("slice_mean_difficulty", "float64", "The mean rating of the slice's test cases."),
    Column("slice_difficulty_p10", "float64", "The 10th percentile of the slice's test-case ratings."),
    Column("slice_difficulty_p50", "float64", "The median of the slice's test-case ratings."),
    Column("slice_difficulty_p90", "float64", "The 90th percentile of the slice's test-case ratings."),
    Column("quantity", "string", "What the row bounds: rating, gap_50/90/99, plackett_luce or rating_across_orders."),
    Column("estimate", "float64", "The quantity computed on all test cases."),
    Column("low", "float64", "The lower end of the quantity's bootstrap interval."),
    Column("high", "float64", "The upper end of the quantity's bootstrap interval."),
    Column("sd", "float64", "The quantity's bootstrap standard deviation."),
    Column("method", "string", "The predictor or estimator (agielo, rasch, additive, agent_mean, ...)."),
    Column("measure", "string", "The held-out measure (log_loss, brier, mae); lower is better."),
    Column("folds", "int64", "How many cross-validation folds over the matches."),
    Column("folds_better_than_default", "int64", "In how many folds the method beat the default prediction."),
    Column("method_a", "string", "One estimator of the pair compared."),
    Column("method_b", "string", "The other estimator of the pair."),
    Column("kendall_tau", "float64", "Kendall's tau between the two estimators' rankings of the agents."),
    Column("spearman", "float64", "Spearman's rho between the two estimators' ratings."),
    Column("top_k", "int64", "How many top agents the agreement looks at."),
    Column("top_k_agreement", "float64", "The share of the top_k agents the two estimators have in common."),
    Column("information", "float64", "The expected Fisher information of the test case for the agent's rating."),
    Column("item", "string", "The item (a test case) the judgments compare."),
    Column("judgments", "int64", "How many judgments name the item."),
    Column("ability", "string", "An ability named by the test cases' tags."),
    Column("mass", "float64", "The ability's fitted mass: how much needing it adds to a test case's difficulty."),
    Column("items", "int64", "How many test cases need the ability."),
    Column("artifact", "string", "The report file's role (figure, report, explorer, ...)."),
    Column("path", "string", "The file's path under the storage root."),
    Column("bytes", "int64", "The file's size in bytes."),
    Column("sha256", "string", "The SHA-256 of the file's bytes."),
    Column("benchmark", "string", "The benchmark's name."),
    Column("agent", "string", "The agent's name."),
    Column("file", "string", "The file the message is about."),
    Column("version", "string", "The file's storage version."),
    Column("rule", "string", "The name of the input-contract rule the file breaks."),
    Column("message", "string", "The error, in one sentence."),
    Column("size", "int64", "The file's size in bytes."),
    Column("rows", "int64", "How many data rows the upload has."),
    Column("row", "int64", "The data row the error names (0-based; empty when none)."),
    Column("line", "int64", "The line of the file the error names (empty when none)."),
    Column("ingest_version", "string", "The version of the code that validated the upload."),
    Column("harness", "string", "The harness whose log the drop is: lm-eval, inspect, helm, eee."),
    Column("drop", "string", "The drop under incoming/: a folder or one file."),
    Column("files_digest", "string", "A fingerprint of the drop's files' versions and of the reader's optional packages."),
    Column("uploads", "string", "The uploads the drop gave, as JSON: benchmark, agent, original names, sources, rows."),
    Column("errors", "string", "The drop's errors, as JSON: file, rule, row, line, message."),
    # the leaderboard across benchmarks (rating/pool.py)
    Column("benchmarks", "int64", "How many benchmarks the agent was evaluated on."),
    Column("agents", "int64", "How many agents the benchmark was evaluated by."),
    Column("centre", "float64", "The benchmark's typical test-case difficulty on the leaderboard's scale (Elo)."),
    Column("spread", "float64", "The sd of the benchmark's test-case difficulties (Elo)."),
    Column("difficulty_p10", "float64", "The 10 % point of the benchmark's test-case difficulties on the leaderboard's scale."),
    Column("difficulty_p50", "float64", "The median of the benchmark's test-case difficulties on the leaderboard's scale."),
    Column("difficulty_p90", "float64", "The 90 % point of the benchmark's test-case difficulties on the leaderboard's scale."),
    Column("best_agent", "string", "The highest-rated jointly rated agent of the benchmark's component."),
    Column(
        "saturation",
        "float64",
        "The share of the benchmark's test cases its best agent is expected to pass: near 1, it no longer separates agents.",
    ),
    Column("higher_is_better", "bool", "Whether the benchmark's metric is better higher, as its benchmark.yaml declares."),
    Column("dispersion", "float64", "The benchmark's dispersion φ in the pooled model (1 for binary scores)."),
    Column("mu_on_pool", "float64", "The agent's rating on this benchmark moved onto the leaderboard's scale (Elo)."),
    Column("pool_mu", "float64", "The agent's rating on the leaderboard across benchmarks (Elo)."),
)
COLUMNS: dict[str, Column] = {c.name: c for c in (*MATCH_TABLE, *_OUTPUTS)}

# columns whose name carries a number: the snapshot count j, a confidence in %
_NUMBERED = (
    (re.compile(r"mu_after_(\d+)"), "Model glicko: the test case's rating after its match number {0} (of its history)."),
    (re.compile(r"sigma_after_(\d+)"), "Model glicko: the test case's sigma after its match number {0}."),
    (re.compile(r"oracle_rating_(\d+)"), "The rating an agent needs to score on the hardest test case with {0} % confidence."),
    (re.compile(r"gap_(\d+)"), "The competency gap: oracle_rating_{0} minus the agent's rating (Elo)."),
    (re.compile(r"pct_beaten_(\d+)"), "The percentage of the test cases the agent beats with at least {0} % confidence."),
)

# a table whose columns are the user's own (the tags of test_cases.csv), or mean something else there
BY_TABLE: dict[str, dict[str, str]] = {
    "test_case_tags": {"*": "A tag of the test case, as the benchmark's test_cases.csv gives it."},
    "upload_ledger": {"kind": "The file's role: upload, tags (the benchmark's test_cases file) or other."},
    "difficulty_judgments": {
        "score": "The item's HodgeRank difficulty: higher is harder, mean zero within its component.",
        "component": "The connected component of the comparison graph: scores compare within one.",
    },
    "reliability_heldout": {"value": "The method's measure on the held-out matches, pooled over the folds."},
}


def describe(column: str, table: str = "") -> str:
    """The description of a column of an output table ('' for a column no one has described)."""
    own = BY_TABLE.get(table, {})
    if column in own:
        return own[column]
    if column in COLUMNS:
        return COLUMNS[column].description
    for pattern, text in _NUMBERED:
        match = pattern.fullmatch(column)
        if match:
            return text.format(*match.groups())
    return own.get("*", "")
