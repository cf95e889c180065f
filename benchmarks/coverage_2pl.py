"""Do ``rate(model="2pl")``'s intervals cover the truth on 2PL data? Coverage, slope and width, regime by regime.

Each replication draws agents θ ~ N(1500, sd²), test cases β ~ N(1500, sd²) and discriminations
α ~ lognormal(0, 0.5) (the issue's), E[S] = 1 / (1 + 10^(−α (θ − β)/400)), binary or graded (Binomial(4, E)/4)
outcomes, and rates them. The 2PL's scale is a convention (θ × c with α / c fits the same): the model's is a
mean discrimination of 1, so the truth is put on it, θ' = 1500 + ᾱ (θ − 1500) and α' = α / ᾱ (ᾱ: the drawn
test cases' mean α). Per regime it prints, over the replications:

- ``cover``: the share of agent intervals covering θ' (up to Elo's common shift: θ' moved to the estimates' mean);
- ``extremes``: the same for the best and the worst true agent of each benchmark;
- ``rank``: the share of ``rank_lo..rank_hi`` containing the true rank (free of the scale's convention);
- ``width``: the interval's width over 2 z × the standard error of a correctly specified 2PL maximum-likelihood
  fit of the same design (the inverse Fisher information at the true parameters, the scale fixed by Σ α' = n_t,
  each agent relative to the agents' mean): median over the agents, and over the extremes;
- ``slope``: of the estimated ratings on θ' (1: the scale is right);
- ``d cover``: the share of test cases whose discrimination interval covers α'; ``d corr``: the correlation of
  ``discrimination`` with α';
- ``cpu``: CPU seconds a replication (``rate``, no snapshots nor reliability).

``--rasch`` adds the default model on the same data (its scale compared in the same way), for reference;
``--discrimination normal`` draws α ~ N(1, 0.5²) instead: the 2PL's own prior family. ``--cost`` prints instead
the CPU and wall seconds of each logistic model on 1M binary matches (1,000 agents × 1,000 test cases, 2PL
data): the fit alone, ``rate`` without snapshots (fit and intervals), and ``rate`` as it runs by default
(ten snapshot fits, no reliability), the 2PL's over the rasch's measured in the same run.

    python benchmarks/coverage_2pl.py [--replications 20] [--rasch] [--discrimination normal] [--cost]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.stats import rankdata

from agielo_dagster.rating import rate
from agielo_dagster.rating.intervals import z_of
from agielo_dagster.rating.logistic import LOGIT
from agielo_dagster.rating.simulate import simulate_matches

REGIMES = (  # name, agents, test cases, sd, share of pairs played, outcome
    ("40x300", 40, 300, 400, 1.0, "binary"),
    ("30x400", 30, 400, 400, 1.0, "binary"),
    ("30x400 sd800", 30, 400, 800, 1.0, "binary"),
    ("100x100", 100, 100, 400, 1.0, "binary"),
    ("50x300 30%", 50, 300, 400, 0.3, "binary"),
    ("100x24", 100, 24, 400, 1.0, "binary"),
    ("30x400 graded", 30, 400, 400, 1.0, "graded"),
)
LEVEL = 0.95


def mle_se(agent, test_case, theta, beta, alpha, trials: int) -> np.ndarray:
    """Each agent's standard error (logits) of θ_a − mean θ in the 2PL maximum-likelihood fit at the true parameters.

    Fisher's information of (θ, β, α) with Σ α fixed (the scale) and Σ θ fixed (the level, which θ_a − mean θ
    does not see): the covariance is Z (Zᵀ I Z)⁻¹ Zᵀ, Z a basis of the constraints' null space.
    """
    n_a, n_t = len(theta), len(beta)
    eta = alpha[test_case] * (theta[agent] - beta[test_case])
    p = 1.0 / (1.0 + np.exp(-eta))
    w = trials * p * (1.0 - p)
    grad = np.zeros((len(agent), 3))  # ∂η/∂(θ_a, β_t, α_t)
    grad[:, 0] = alpha[test_case]
    grad[:, 1] = -alpha[test_case]
    grad[:, 2] = theta[agent] - beta[test_case]
    index = np.stack([agent, n_a + test_case, n_a + n_t + test_case], axis=1)
    info = np.zeros((n_a + 2 * n_t, n_a + 2 * n_t))
    for j in range(3):
        for k in range(3):
            np.add.at(info, (index[:, j], index[:, k]), w * grad[:, j] * grad[:, k])
    constraints = np.zeros((2, n_a + 2 * n_t))
    constraints[0, :n_a] = 1.0
    constraints[1, n_a + n_t :] = 1.0
    z = np.linalg.svd(constraints)[2][2:].T
    cov = z @ np.linalg.solve(z.T @ info @ z, z.T)
    centre = np.eye(n_a) - 1.0 / n_a
    return np.sqrt(np.diag(centre @ cov[:n_a, :n_a] @ centre))


def replicate(n_a, n_t, sd, share, outcome, seed, model, discrimination="lognormal"):
    rng = np.random.default_rng(seed)
    theta, beta = rng.normal(1500.0, sd, n_a), rng.normal(1500.0, sd, n_t)
    alpha = rng.lognormal(0.0, 0.5, n_t) if discrimination == "lognormal" else rng.normal(1.0, 0.5, n_t)
    matches = simulate_matches(beta, theta, seed=seed + 1, outcome=outcome, coverage=share, discrimination=alpha)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a sparse draw may leave an agent in a group of its own
        result = rate(
            matches, model=model, with_reliability=False, snapshot_fractions=(1.0,), test_case_snapshot_fractions=(1.0,)
        )
    cpu = time.process_time() - start
    mean_alpha = alpha.mean()
    agents = result.agents
    idx = agents["agent_id"].str.slice(6).astype(int).to_numpy()
    truth = 1500.0 + mean_alpha * (theta[idx] - 1500.0)
    mu, lo, hi = (agents[c].to_numpy() for c in ("mu", "mu_lo", "mu_hi"))
    shifted = truth + (mu.mean() - truth.mean())
    true_rank = rankdata(-truth, method="min")
    a = matches["agent_id"].str.slice(6).astype(int).to_numpy()
    t = matches["test_case_id"].str.slice(3).astype(int).to_numpy()
    scale = (theta - 1500.0) * mean_alpha / LOGIT, (beta - 1500.0) * mean_alpha / LOGIT, alpha / mean_alpha
    se = LOGIT * mle_se(a, t, *scale, 4 if outcome == "graded" else 1)[idx]
    row = dict(
        covered=(lo <= shifted) & (shifted <= hi),
        rank_covered=(agents["rank_lo"].to_numpy() <= true_rank) & (true_rank <= agents["rank_hi"].to_numpy()),
        extreme=(truth == truth.max()) | (truth == truth.min()),
        width=(hi - lo) / (2.0 * z_of(LEVEL) * se),
        slope=float(np.polyfit(truth, mu, 1)[0]),
        cpu=cpu,
    )
    if model == "2pl":
        cases = result.test_cases
        true_d = alpha[cases["test_case_id"].str.slice(3).astype(int).to_numpy()] / mean_alpha
        d, d_lo, d_hi = (cases[c].to_numpy() for c in ("discrimination", "discrimination_lo", "discrimination_hi"))
        row.update(d_covered=(d_lo <= true_d) & (true_d <= d_hi), d_corr=float(np.corrcoef(d, true_d)[0, 1]))
    return row


def cost(side: int = 1000, repeats: int = 2) -> None:
    from agielo_dagster.rating.frames import encode_matches
    from agielo_dagster.rating.graph import components
    from agielo_dagster.rating.logistic import by_test_case, fit_logistic
    from agielo_dagster.rating.logistic_rate import LOGISTIC_MODELS
    from agielo_dagster.rating.ratings import rate_encoded

    rng = np.random.default_rng(0)
    theta, beta, alpha = rng.normal(1500, 400, side), rng.normal(1500, 400, side), rng.lognormal(0.0, 0.5, side)
    m = encode_matches(simulate_matches(beta, theta, seed=1, discrimination=alpha))
    data, component = by_test_case(m), components(m)[1]
    quick = dict(with_reliability=False, snapshot_fractions=(1.0,), test_case_snapshot_fractions=(1.0,))
    jobs = {
        "fit": lambda model: fit_logistic(data, component, binary=True, model=LOGISTIC_MODELS[model]),
        "rate, no snapshots": lambda model: rate_encoded(m, dict(model=model, **quick)),
        "rate, default snapshots": lambda model: rate_encoded(m, dict(model=model, with_reliability=False)),
    }
    small = encode_matches(simulate_matches(beta[:20], theta[:20], seed=2, discrimination=alpha[:20]))
    for model in LOGISTIC_MODELS:  # compile and load the kernels outside the timing
        rate_encoded(small, dict(model=model, with_reliability=False))
    print(f"{len(m):,} binary matches, {side} agents x {side} test cases; best of {repeats}, CPU s (wall s)")
    for name, job in jobs.items():
        seconds = {}
        for model in LOGISTIC_MODELS:
            runs = []
            for _ in range(repeats):
                cpu, wall = time.process_time(), time.perf_counter()
                job(model)
                runs.append((time.process_time() - cpu, time.perf_counter() - wall))
            seconds[model] = min(runs)
        (r_cpu, r_wall), (t_cpu, t_wall) = seconds["rasch"], seconds["2pl"]
        print(
            f"{name:24} rasch {r_cpu:6.2f} ({r_wall:6.2f})   2pl {t_cpu:6.2f} ({t_wall:6.2f})   2pl / rasch {t_cpu / r_cpu:5.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--rasch", action="store_true", help="also the default model on the same data")
    parser.add_argument("--discrimination", choices=("lognormal", "normal"), default="lognormal")
    parser.add_argument("--regimes", nargs="*", help="only these regimes (names as printed)")
    parser.add_argument("--cost", action="store_true", help="the cost at 1M matches instead")
    args = parser.parse_args()
    if args.cost:
        cost()
        return
    law = "lognormal(0, 0.5)" if args.discrimination == "lognormal" else "N(1, 0.5²)"
    print(f"{args.replications} replications a regime; α ~ {law}; {LEVEL:.0%} intervals")
    print(
        f"{'model':5} {'regime':14} {'cover':>6} {'extremes':>8} {'rank':>6} {'width':>6} {'ext':>5} {'slope':>6} "
        f"{'d cover':>7} {'d corr':>6} {'cpu':>6}"
    )
    start = time.perf_counter()
    for model in ("2pl", "rasch") if args.rasch else ("2pl",):
        for name, n_a, n_t, sd, share, outcome in REGIMES:
            if args.regimes and name not in args.regimes:
                continue
            reps = [
                replicate(n_a, n_t, sd, share, outcome, 1000 * r + 11, model, args.discrimination)
                for r in range(args.replications)
            ]
            covered = np.concatenate([r["covered"] for r in reps])
            extreme = np.concatenate([r["extreme"] for r in reps])
            width = np.concatenate([r["width"] for r in reps])
            d_cover = f"{np.concatenate([r['d_covered'] for r in reps]).mean():7.3f}" if model == "2pl" else f"{'':7}"
            d_corr = f"{np.mean([r['d_corr'] for r in reps]):6.3f}" if model == "2pl" else f"{'':6}"
            print(
                f"{model:5} {name:14} {covered.mean():6.3f} {covered[extreme].mean():8.3f} "
                f"{np.concatenate([r['rank_covered'] for r in reps]).mean():6.3f} {np.median(width):6.2f} "
                f"{np.median(width[extreme]):5.2f} {np.mean([r['slope'] for r in reps]):6.3f} {d_cover} {d_corr} "
                f"{np.mean([r['cpu'] for r in reps]):6.2f}",
                flush=True,
            )
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
