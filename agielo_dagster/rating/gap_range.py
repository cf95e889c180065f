"""What graded competency gaps rest on: the metric range the scoring declares.

A graded score S = (M − lo) / (hi − lo) puts every match on the declared range, so the ratings,
and the gaps to an oracle, depend on it: declare the absolute error of the diabetes regressors
on [0, 1000] rather than on the [0, 242] it spans, and every score crowds near 1; the best
regressor's ``gap_50`` moves from +38.7 to −397.4 Elo and its ``pct_beaten_91`` from 27 % to 99.8 %.
Binary scorings declare no range (the threshold decides), so nothing here applies to them.

:func:`range_assumption` states the assumed range beside the observed one and flags a declared range
*far* wider than the metric's observed span: observed span < ``FAR_SHARE`` (50 %) of the declared span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .frames import Plain
from .scoring import Scoring

__all__ = ["FAR_SHARE", "RangeAssumption", "range_assumption"]

FAR_SHARE = 0.5


@dataclass(frozen=True)
class RangeAssumption:
    """The declared metric range of a graded scoring against the observed one.

    Attributes
    ----------
    scoring : str
        The scoring's name (``identity``, ``minmax``; ``binary`` has no range).
    declared_lo, declared_hi : float
        The range the scores assume (NaN for ``binary``).
    observed_lo, observed_hi : float
        The smallest and largest metric of the matches.
    observed_share : float
        (observed_hi − observed_lo) / (declared_hi − declared_lo) (NaN for ``binary``).
    far : bool
        The declared range is far wider than the observed one: ``observed_share < FAR_SHARE``.
    warning : str
        A sentence saying so and what it does to the gaps ("" when not ``far``).
    """

    scoring: str
    declared_lo: float
    declared_hi: float
    observed_lo: float
    observed_hi: float
    observed_share: float
    far: bool
    warning: str

    def as_metadata(self) -> dict[str, Plain]:
        """Plain values for asset metadata."""
        graded = not math.isnan(self.observed_share)
        return {
            "assumed_metric_range": (
                f"[{self.declared_lo:g}, {self.declared_hi:g}] ({self.scoring})" if graded else f"none ({self.scoring})"
            ),
            "observed_metric_range": f"[{self.observed_lo:g}, {self.observed_hi:g}]",
            "observed_share_of_range": round(self.observed_share, 4) if graded else None,
            "range_warning": self.warning,
        }


def range_assumption(
    scoring: Scoring, observed_lo: float, observed_hi: float, *, far_share: float = FAR_SHARE
) -> RangeAssumption:
    """State the range graded gaps assume, and whether it is far wider than the observed ``[observed_lo, observed_hi]``."""
    if not (math.isfinite(observed_lo) and math.isfinite(observed_hi) and observed_lo <= observed_hi):
        raise ValueError(f"the observed metric range must be finite with lo <= hi, got [{observed_lo}, {observed_hi}]")
    if not 0 < far_share <= 1:
        raise ValueError(f"far_share must lie in (0, 1], got {far_share!r}")
    if not scoring.declares_range:
        nan = float("nan")
        return RangeAssumption(scoring.name, nan, nan, float(observed_lo), float(observed_hi), nan, False, "")
    lo, hi = float(scoring.lo), float(scoring.hi)
    share = (observed_hi - observed_lo) / (hi - lo)
    far = share < far_share
    warning = (
        f"the scoring declares the metric on [{lo:g}, {hi:g}] but the matches span [{observed_lo:g}, {observed_hi:g}] "
        f"({100 * share:.0f} % of it): graded scores, ratings and competency gaps depend on the declared range, and a "
        f"range this much wider crowds the scores and shrinks the gaps; declare the metric's real range in benchmark.yaml"
        if far
        else ""
    )
    return RangeAssumption(scoring.name, lo, hi, float(observed_lo), float(observed_hi), float(share), far, warning)
