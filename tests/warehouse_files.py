"""A warehouse's files as tests compare them: each by its sha256, the leaderboard across benchmarks by its numbers.

The leaderboard is fitted from its last fit (a run after an upload, a healed run, a daemon that rated benchmarks one
at a time), a clean run's from scratch, both to steps of 1e-6 logits: their last digits may differ, so its tables are
equal within 0.01 Elo and its pages (whose numbers are the tables') by presence.
"""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd


class Pooled:
    """A table of the leaderboard across benchmarks, equal to another within 0.01 Elo."""

    def __init__(self, path: Path):
        self.frame = pd.read_parquet(path)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Pooled) or list(self.frame.columns) != list(other.frame.columns):
            return False
        floats = self.frame.select_dtypes("float").columns
        return self.frame.drop(columns=floats).equals(other.frame.drop(columns=floats)) and np.allclose(
            self.frame[floats], other.frame[floats], atol=0.01, equal_nan=True
        )

    def __repr__(self) -> str:
        return f"Pooled({self.frame.shape})"


POOLED = ("agent_leaderboard", "benchmark_scales", "agent_benchmark_ratings")
POOLED_PAGES = ("explorer/_index.html", "reports/_leaderboard.html", "leaderboard_pages/_all.parquet")  # their numbers


def warehouse(root: Path) -> dict[str, object]:
    top = root / "warehouse"
    out: dict[str, object] = {}
    for p in sorted(top.rglob("*")):
        name = str(p.relative_to(top))
        if not p.is_file() or p.relative_to(top).parts[0] == "cache":
            continue
        if p.relative_to(top).parts[0] in POOLED:
            out[name] = Pooled(p)
        elif name in POOLED_PAGES:
            out[name] = "present: its numbers are the tables'"
        else:
            out[name] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out
