"""The quick pass (``pytest -m 'not slow'``, docs/testing.md) still runs every real component at least once."""

import json
import os
import subprocess
import sys

from .conftest import COMPONENTS
from .devserver import REPO


def test_the_quick_pass_keeps_a_test_of_every_real_component(tmp_path):
    report = tmp_path / "components.json"
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow", "-p", "no:cacheprovider", "tests"],
        cwd=REPO,
        env={**os.environ, "AGIELO_COMPONENTS_REPORT": str(report)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    selected = json.loads(report.read_text())
    assert set(selected) == set(COMPONENTS)
    missing = {name: COMPONENTS[name] for name, tests in selected.items() if not tests}
    assert not missing, f"no quick test runs {missing}: unmark one cheap test of each as slow"
