"""A small pool of agents over three benchmarks, as the pool's three tables hold it, for the pages that show it.

Main component (digits, quiz): ``gpt-a`` first; ``<b>x</b>`` and a hostile ``</script>`` id tied for 2nd (the latter
evaluated on digits only); ``partial`` provisional (a partial upload). ``lonely`` alone on ``island``: component 1.
quiz is saturated (its best agent is expected to pass every test case) and lower-is-better.
"""

import pandas as pd

BOLD = "<b>x</b>"
SCRIPT = "</script><script>alert(1)</script>"
MAIN = ["gpt-a", BOLD, SCRIPT, "partial"]  # by rank, then by rating within a rank


def pool_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``agent_leaderboard``, ``benchmark_scales`` and ``agent_benchmark_ratings`` of the pool."""
    ranks = lambda *v: pd.array(v, dtype="Int64")  # noqa: E731
    leaderboard = pd.DataFrame(
        {
            "agent_id": [SCRIPT, "lonely", "partial", "gpt-a", BOLD],  # in no order: the pages order them
            "mu": [1620.0, 1500.0, 1500.0, 1800.0, 1650.0],
            "sigma": [36.0, 60.0, 90.0, 30.0, 24.0],
            "mu_lo": [1560.0, 1400.0, 1350.0, 1750.0, 1610.0],
            "mu_hi": [1680.0, 1600.0, 1650.0, 1850.0, 1690.0],
            "rank": ranks(2, None, 2, 1, 2),
            "rank_lo": ranks(2, None, 2, 1, 2),
            "rank_hi": ranks(4, None, 4, 1, 4),
            "benchmarks": [1, 1, 1, 2, 2],
            "test_cases": [40, 10, 12, 80, 80],
            "component": [0, 1, 0, 0, 0],
            "status": ["rated", "disconnected", "provisional", "rated", "rated"],
            "status_reason": ["", "shares no test case with the main agents", "placed from a partial upload", "", ""],
        }
    )
    scales = pd.DataFrame(
        {
            "benchmark": ["quiz", "island", "digits"],
            "test_cases": [40, 10, 40],
            "agents": [3, 1, 3],
            "component": [0, 1, 0],
            "centre": [1300.0, 1450.0, 1550.0],
            "spread": [90.0, 50.0, 210.0],
            "difficulty_p10": [1190.0, 1390.0, 1280.0],
            "difficulty_p50": [1300.0, 1450.0, 1550.0],
            "difficulty_p90": [1410.0, 1510.0, 1820.0],
            "best_agent": ["gpt-a", "lonely", "gpt-a"],
            "saturation": [1.0, 0.5, 0.82],
            "higher_is_better": [False, True, True],
        }
    )
    by_benchmark = pd.DataFrame(
        {
            "agent_id": ["gpt-a", "gpt-a", BOLD, BOLD, SCRIPT, "partial", "lonely"],
            "benchmark": ["digits", "quiz", "digits", "quiz", "digits", "quiz", "island"],
            "test_cases": [40, 40, 40, 40, 40, 12, 10],
            "mu": [1620.0, 1700.0, 1500.0, 1580.0, 1480.0, 1400.0, 1500.0],
            "mu_on_pool": [1790.0, 1810.0, 1640.0, 1660.0, 1620.0, 1500.0, 1500.0],
            "pool_mu": [1800.0, 1800.0, 1650.0, 1650.0, 1620.0, 1500.0, 1500.0],
            "status": ["rated", "rated", "rated", "rated", "rated", "provisional", "disconnected"],
        }
    )
    return leaderboard, scales, by_benchmark
