"""Which players the matches link: connected components of the (agent, test case) graph.

Ratings are comparable only within a component. Two agents with no chain of shared test
cases between them are rated on scales that nothing ties together (each component's
ratings drift from the same start, 1500, on their own), so their order means nothing.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._kernels import agent_components
from .frames import Matches

__all__ = ["DisconnectedMatchesWarning", "components", "warn_disconnected", "warn_if_disconnected"]


class DisconnectedMatchesWarning(UserWarning):
    """The match graph falls apart: ratings of different components are not comparable."""


def components(m: Matches) -> tuple[int, np.ndarray, np.ndarray]:
    """Connected components of the match graph.

    Returns
    -------
    (n_components, agent_component, test_case_component)
        Components are numbered 0, 1, … by decreasing number of matches (ties: the
        component holding the first agent id comes first); component 0 is the main one.
    """
    return components_of(m.agent, m.test_case, m.n_agents, m.n_test_cases)


def components_of(
    agent: np.ndarray, test_case: np.ndarray, n_agents: int, n_test_cases: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """:func:`components` of matches given by their codes (int32): agent[i] played test_case[i]."""
    root, first = agent_components(agent, test_case, n_agents, n_test_cases)
    roots, agent_label = np.unique(root, return_inverse=True)
    n = len(roots)
    if n == 1 and (first >= 0).all():
        return 1, np.zeros(n_agents, dtype=np.int64), np.zeros(n_test_cases, dtype=np.int64)
    size = np.bincount(agent_label[agent], minlength=n)
    smallest_agent = np.full(n, n_agents, dtype=np.int64)
    np.minimum.at(smallest_agent, agent_label, np.arange(n_agents))
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((smallest_agent, -size))] = np.arange(n)
    agent_component = rank[agent_label]
    # a test case without a match (possible in a subset of a table) belongs to no component: -1
    test_case_component = np.where(first >= 0, agent_component[np.maximum(first, 0)], -1)
    return n, agent_component, test_case_component


def warn_if_disconnected(
    n_components: int,
    agent_component: np.ndarray,
    agent_ids: np.ndarray,
    what: str,
    *,
    players: str = "agents",
    link: str = "test case",
) -> None:
    """Warn (:class:`DisconnectedMatchesWarning`, naming ``what``) when the graph has more than one component.

    The warning points at the first line outside the engine, whatever the depth of the call.
    """
    if n_components > 1:
        sizes = np.bincount(agent_component)
        example = agent_ids[np.flatnonzero(agent_component == 1)[0]]
        warnings.warn(
            f"{what}: the matches fall into {n_components} groups that share no {link} ({players} per group: "
            f"{', '.join(map(str, sizes.tolist()))}; e.g. {example!r} is not linked to group 0). Ratings, ranks and "
            "gaps compare only within a group: see the `component` column",
            DisconnectedMatchesWarning,
            stacklevel=_outside_the_engine(),
        )


def warn_disconnected(m: Matches, what: str) -> int:
    """The one check every estimator runs: warn when ``m``'s matches fall apart; the number of components.

    Estimators that fit one scale (Rasch, Plackett-Luce with pseudo-wins, the bootstrap) would
    otherwise put groups that share no test case side by side without a word, as :func:`rate` does not.
    """
    n_components, agent_component, _ = components(m)
    warn_if_disconnected(n_components, agent_component, m.agent_ids, what)
    return n_components


def _outside_the_engine() -> int:
    """``stacklevel`` of the innermost frame whose code lies outside this package (the engine's caller)."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1  # the frame of warn_if_disconnected is level 1 for warnings.warn
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
