"""The embedded demo: real per-sample results of classic classifiers on scikit-learn's bundled data.

Each model is evaluated with 5-fold out-of-fold predictions, so every sample of
the dataset is a real test case seen by every model exactly once, as a held-out
case. One raw log per model is written under ``<root>/raw/<benchmark>/``:

- ``digits`` (1,797 handwritten digits, 20 models) and ``breast_cancer`` (569 tumours,
  13 models): metric ``p_true``, the out-of-fold probability the model gives the true class
  (graded, so each measurement says more than right/wrong), scored with ``identity``.

Extra columns (``correct``, ``true_label``, ``predicted_label``) are test-case metadata.
Runs in well under a minute on 2 cores (docs/performance.md); the data never leaves the machine.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from .domain.layout import raw_folder

__all__ = ["DEMO_BENCHMARKS", "demo_models", "write_demo_data"]

DEMO_BENCHMARKS = ("digits", "breast_cancer")

_YAML = {
    "digits": """\
description: >-
  scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes); one test case per image;
  metric is the out-of-fold probability a classic classifier gives the true digit.
metric: p_true
scoring: identity
""",
    "breast_cancer": """\
description: >-
  Wisconsin breast-cancer diagnosis (569 tumours, 2 classes); metric is the out-of-fold
  probability the model gives the true diagnosis.
metric: p_true
scoring: identity
""",
}


def demo_models(benchmark: str) -> dict[str, Callable[[], object]]:
    """Factories of the demo's scikit-learn models for a benchmark (fixed seeds)."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.ensemble import (
        AdaBoostClassifier,
        ExtraTreesClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.naive_bayes import BernoulliNB, GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    def scaled(model):
        return lambda: make_pipeline(StandardScaler(), model())

    models = {
        "logistic_regression": scaled(lambda: LogisticRegression(max_iter=2000)),
        "logistic_regression_strong_l2": scaled(lambda: LogisticRegression(C=0.005, max_iter=2000)),
        "gaussian_nb": GaussianNB,
        "bernoulli_nb": BernoulliNB,
        "knn_1": lambda: KNeighborsClassifier(1),
        "knn_3": lambda: KNeighborsClassifier(3),
        "knn_5": scaled(lambda: KNeighborsClassifier(5)),
        "knn_15": scaled(lambda: KNeighborsClassifier(15)),
        "decision_stump_depth_2": lambda: DecisionTreeClassifier(max_depth=2, random_state=0),
        "decision_tree_depth_4": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
        "decision_tree": lambda: DecisionTreeClassifier(random_state=0),
        "random_forest_10": lambda: RandomForestClassifier(10, random_state=0),
        # scikit-learn's 100 trees, on one thread: on 2 idle cores two joblib threads took the same wall time and
        # 1 CPU-s more a forest, and 200 trees 3.7 CPU-s more over both benchmarks
        "random_forest": lambda: RandomForestClassifier(random_state=0),
        "extra_trees": lambda: ExtraTreesClassifier(random_state=0),
        "hist_gradient_boosting": lambda: HistGradientBoostingClassifier(max_iter=30, learning_rate=0.3, random_state=0),
        "adaboost": lambda: AdaBoostClassifier(random_state=0),
        "svc_rbf": scaled(lambda: SVC(probability=True, random_state=0)),
        "linear_discriminant": LinearDiscriminantAnalysis,
        "mlp": scaled(lambda: MLPClassifier((64,), max_iter=300, random_state=0)),
        "sgd_log_loss": scaled(lambda: SGDClassifier(loss="log_loss", random_state=0)),
    }
    if benchmark == "digits":
        drop = set()  # 20 models
    elif benchmark == "breast_cancer":  # 13 models
        drop = {
            "logistic_regression_strong_l2",
            "bernoulli_nb",
            "knn_1",
            "knn_3",
            "decision_stump_depth_2",
            "random_forest_10",
            "sgd_log_loss",
        }
    else:
        raise ValueError(f"unknown demo benchmark {benchmark!r}; known: {', '.join(DEMO_BENCHMARKS)}")
    return {name: make for name, make in models.items() if name not in drop}


def demo_logs(benchmark: str) -> dict[str, pd.DataFrame]:
    """One raw log (a data frame) per model: out-of-fold results for every sample."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    loader = {"digits": load_digits, "breast_cancer": load_breast_cancer}[benchmark]
    x, y = loader(return_X_y=True)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    ids = [f"{benchmark}_{i:04d}" for i in range(len(y))]
    from threadpoolctl import threadpool_limits

    from .allocator import reusing_freed_memory

    logs = {}
    # OpenMP on one thread: the demo's models are small (569 and 1,797 samples), and their many short parallel
    # regions cost more in waking threads than they save. The whole demo on 2 idle cores (2026-11-26): 44 s and
    # 46 CPU-s against 49 s and 59 CPU-s on both cores; beside 3 busy processes 50 CPU-s against 70. The
    # engine's order threads still use every usable core. Freed arrays stay in the heap while the models train
    # (allocator.py maps and unmaps every block of 128 KiB and more, for wide benchmarks' sake).
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="openmp"), reusing_freed_memory():
        warnings.simplefilter("ignore")  # convergence chatter of the weak baselines is expected
        for name, make in demo_models(benchmark).items():
            proba = cross_val_predict(make(), x, y, cv=folds, method="predict_proba")
            predicted = proba.argmax(axis=1)
            p_true = np.round(proba[np.arange(len(y)), y], 6)
            logs[name] = pd.DataFrame(
                {
                    "test_case_id": ids,
                    "p_true": p_true,
                    "correct": (predicted == y).astype(np.int64),
                    "true_label": y,
                    "predicted_label": predicted,
                }
            )
    return logs


def write_demo_data(root: str, benchmarks: tuple[str, ...] = DEMO_BENCHMARKS, *, overwrite: bool = False) -> list[str]:
    """Write the demo's raw logs and ``benchmark.yaml`` files under ``<root>/raw/``.

    Existing files are kept unless ``overwrite``; returns the paths written.
    """
    import fsspec

    fs, base = fsspec.core.url_to_fs(root)
    written = []
    for benchmark in benchmarks:
        folder = f"{base.rstrip('/')}/{raw_folder(benchmark)}"
        fs.makedirs(folder, exist_ok=True)
        spec_path = f"{folder}/benchmark.yaml"
        if overwrite or not fs.exists(spec_path):
            with fs.open(spec_path, "wb") as f:
                f.write(_YAML[benchmark].encode())
            written.append(spec_path)
        if not overwrite and all(fs.exists(f"{folder}/{m}.csv") for m in demo_models(benchmark)):
            continue
        for name, log in demo_logs(benchmark).items():
            path = f"{folder}/{name}.csv"
            if overwrite or not fs.exists(path):
                buffer = io.StringIO()
                log.to_csv(buffer, index=False)
                with fs.open(path, "wb") as f:
                    f.write(buffer.getvalue().encode())
                written.append(path)
    return written
