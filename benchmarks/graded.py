"""Graded, lower-is-better benchmarks the held-out benchmark and the rating tests share: a real regression
benchmark (scikit-learn's bundled diabetes data) and a simulated one of absolute errors."""

import numpy as np
import pandas as pd

from agielo_dagster.rating import minmax

DIABETES_HI = 350.0  # declared range of the absolute error: the target spans 25 … 346


def diabetes_benchmark():
    """A real graded, lower-is-better benchmark: 12 scikit-learn regressors on the bundled `diabetes` data.

    Each regressor predicts every patient out of fold (5-fold); the metric is the absolute error
    (lower is better), scored with minmax(0, 350, higher_is_better=False). No download: the data ship
    with scikit-learn.
    """
    from sklearn.datasets import load_diabetes
    from sklearn.dummy import DummyRegressor
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
    from sklearn.linear_model import BayesianRidge, Lasso, LinearRegression, Ridge
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor

    from agielo_dagster.rating import minmax

    x, y = load_diabetes(return_X_y=True)
    models = {
        "linear_regression": LinearRegression(),
        "ridge": Ridge(alpha=1.0),
        "lasso": Lasso(alpha=0.1),
        "bayesian_ridge": BayesianRidge(),
        "knn_5": make_pipeline(StandardScaler(), KNeighborsRegressor(5)),
        "knn_25": make_pipeline(StandardScaler(), KNeighborsRegressor(25)),
        "svr_rbf": make_pipeline(StandardScaler(), SVR(C=100.0)),
        "decision_tree_depth_3": DecisionTreeRegressor(max_depth=3, random_state=0),
        "decision_tree": DecisionTreeRegressor(random_state=0),
        "random_forest": RandomForestRegressor(100, random_state=0, n_jobs=1),
        "extra_trees": ExtraTreesRegressor(100, random_state=0, n_jobs=1),
        "mean_predictor": DummyRegressor(),
    }
    folds = KFold(5, shuffle=True, random_state=0)
    scoring = minmax(0.0, DIABETES_HI, higher_is_better=False)
    frames = []
    for name, model in models.items():
        error = np.abs(cross_val_predict(model, x, y, cv=folds) - y)
        frames.append(
            pd.DataFrame(
                {
                    "test_case_id": [f"patient_{i:03d}" for i in range(len(y))],
                    "agent_id": name,
                    "metric": error,
                    "score": scoring.score(error),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def absolute_error_benchmark(seed: int = 1, n_agents: int = 12, n_test_cases: int = 300):
    """A simulated graded, lower-is-better benchmark: absolute errors dominated by how hard each test case is.

    Error of agent a on test case t: |h_t·k_a + s_a·ε| with h_t ~ Exponential(50) (hard cases), k_a ~ U(0.9, 1.1)
    and s_a ~ U(5, 15) (the agent's own noise), ε ~ N(0, 1); scored minmax(0, hi, lower is better), hi the
    largest error rounded up to 50.
    """
    rng = np.random.default_rng(seed)
    h, k, s = rng.exponential(50.0, n_test_cases), rng.uniform(0.9, 1.1, n_agents), rng.uniform(5, 15, n_agents)
    a, t = np.tile(np.arange(n_agents), n_test_cases), np.repeat(np.arange(n_test_cases), n_agents)
    error = np.abs(h[t] * k[a] + rng.normal(0, 1, len(a)) * s[a])
    scoring = minmax(0.0, float(np.ceil(error.max() / 50) * 50), higher_is_better=False)
    frame = pd.DataFrame({"test_case_id": [f"tc_{i:03d}" for i in t], "agent_id": [f"agent_{j:02d}" for j in a], "metric": error})
    return frame.assign(score=scoring.score(error)), scoring
