"""Estimators beside AGI-Elo: Plackett-Luce (ONEBench), HodgeRank (TADDL-V), Rasch, and uncertainty."""

from .hodge import HodgeRankResult, hodge_rank
from .plackett_luce import pairwise_wins, plackett_luce
from .uncertainty import bootstrap, robustness

__all__ = ["HodgeRankResult", "bootstrap", "hodge_rank", "pairwise_wins", "plackett_luce", "robustness"]
