"""The Elo scale shared by the estimators: E[S] = 1 / (1 + 10^(−Δ/400)) = σ(Δ · ln 10 / 400)."""

import math

LOGIT_TO_ELO = 400.0 / math.log(10.0)
