"""Fixtures of the rating tests: the demo's second real benchmark and a real regression benchmark."""

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="session")
def demo_breast_cancer():
    """The embedded demo's breast_cancer benchmark (13 scikit-learn classifiers, 569 tumours), as a match table."""
    from agielo_dagster.demo import demo_logs

    logs = demo_logs("breast_cancer")
    return pd.concat(
        [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()], ignore_index=True
    )[["test_case_id", "agent_id", "metric", "score"]]


DIABETES_HI = 350.0  # declared range of the absolute error: the target spans 25 … 346


@pytest.fixture(scope="session")
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
