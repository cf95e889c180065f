"""Every fenced code block of README.md and docs/*.md runs as written (the convention: docs/testing.md).

Each page gets one workspace, a temporary copy of the repository (so no block writes into the checkout);
its blocks run in order there, shell blocks in bash with the project's virtual environment activated,
python blocks in one namespace per page, so a page can be a tour. DAGSTER_HOME and AGIELO_STORAGE point
into the workspace (its ``.dagster_home`` and ``agielo_data``, where the docs say they are), HOME and
Hugging Face's caches too, with the harnesses offline: nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .blocks import ROOT, Block, all_blocks, shell_script

BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.is_command and b.no_run is None]
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1"}


def test_every_block_says_what_it_is():
    """A language on every fence; every command states where it runs; every command not run says why."""
    assert len(BLOCKS) > 20
    problems = [f"{b.id}: no language after ```" for b in BLOCKS if not b.lang]
    problems += [f"{b.id}: first line states no working directory" for b in BLOCKS if b.is_command and not b.where]
    problems += [f"{b.id}: no-run without a reason" for b in BLOCKS if b.no_run == ""]
    problems += [f"{b.id}: no-run on data" for b in BLOCKS if not b.is_command and b.no_run is not None]
    problems += [
        f"{b.id}: a sketch that names no test running it" for b in BLOCKS if b.sketch is not None and "tests/" not in b.sketch
    ]
    assert not problems, "\n".join(problems)


def test_data_blocks_are_valid_input():
    """A ``benchmark.yaml`` example parses as one, and a tag-file example reads as the pipeline reads it."""
    import pyarrow as pa
    import yaml

    from agielo_dagster.domain.contract import parse_benchmark_spec
    from agielo_dagster.domain.tags import read_tags

    specs = [b for b in BLOCKS if b.lang == "yaml" and "benchmark.yaml" in b.text.splitlines()[0]]
    tags = [b for b in BLOCKS if b.file and Path(b.file).stem == "test_cases"]
    assert specs and tags
    for block in specs:
        spec = parse_benchmark_spec(block.text.encode(), "quiz", "raw/quiz/benchmark.yaml")
        assert spec.metric == yaml.safe_load(block.text)["metric"]
    for block in tags:
        table = read_tags(block.text.encode(), block.file)
        assert table.num_rows == len(block.text.splitlines()) - 1
        if ";" in block.text:  # `algebra; geometry` is two values, as the docs say
            assert any(pa.types.is_list(field.type) for field in table.schema)


def test_synopses_name_real_options():
    """A usage block (``agielo run  [--storage URI] …``) names only options the command has."""
    synopses = [line.split() for b in BLOCKS if b.lang == "text" for line in b.text.splitlines() if line.startswith("agielo ")]
    assert synopses
    for words in synopses:
        usage = subprocess.run([sys.executable, "-m", "agielo_dagster.cli", words[1], "--help"], capture_output=True, text=True)
        assert usage.returncode == 0, usage.stderr
        for option in re.findall(r"--[\w-]+", " ".join(words)):
            assert option in usage.stdout, f"{' '.join(words[:2])} has no {option}"


class Workspace:
    """One page's copy of the repository, its environment and its python namespace."""

    def __init__(self, base: Path, page: str):
        self.repo = base / "repo"
        tracked = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
        for name in filter(None, tracked.split("\0")):
            if (ROOT / name).is_file():
                (self.repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, self.repo / name)
        page_blocks = [b for b in BLOCKS if b.page == page]
        if not any("-m venv .venv" in b.text for b in page_blocks):
            (self.repo / ".venv").symlink_to(sys.prefix)
        for block in page_blocks:
            if block.file:
                (self.repo / block.file).parent.mkdir(parents=True, exist_ok=True)
                (self.repo / block.file).write_text(block.text)
        (base / "home").mkdir()
        bin_dir = str(Path(sys.executable).parent)
        self.env = {
            **os.environ,
            **OFFLINE,
            "HOME": str(base / "home"),
            "HF_HOME": str(base / "home" / ".hf"),
            "DAGSTER_HOME": str(self.repo / ".dagster_home"),
            "AGIELO_STORAGE": str(self.repo / "agielo_data"),
            "VIRTUAL_ENV": sys.prefix,
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        }
        (self.repo / ".dagster_home").mkdir(exist_ok=True)
        if not (self.repo / ".dagster_home" / "dagster.yaml").exists():
            (self.repo / ".dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        self.namespace: dict = {"__name__": "__main__"}
        self.has_demo = False
        self.done: set[Block] = set()

    def add_demo(self, demo: dict) -> None:
        """What ``agielo demo`` leaves in the repository root: its storage and its instance (run once per session)."""
        assert demo["out"].returncode == 0, demo["out"].stdout + demo["out"].stderr
        shutil.copytree(demo["root"], self.repo / "agielo_data", dirs_exist_ok=True)
        # the demo's instance replaces one an earlier block of the page made: sqlite files copied over another
        # instance's (its -wal and -shm left beside them) are not that instance (pipeline.md lost its partitions)
        shutil.rmtree(self.repo / ".dagster_home", ignore_errors=True)
        shutil.copytree(demo["home"], self.repo / ".dagster_home")
        self.has_demo = True

    def cwd(self, block: Block) -> Path:
        where = block.where
        folder = self.repo / where["dir"] if where["dir"] else self.repo
        assert folder.is_dir(), f"{block.id}: the folder it names does not exist: {where['dir']}"
        return folder

    def run(self, block: Block, monkeypatch) -> str:
        self.done.add(block)
        return self.run_python(block, monkeypatch) if block.lang == "python" else self.run_shell(block)

    def run_shell(self, block: Block) -> str:
        log = self.repo.parent / f"block-{block.line}.log"
        with open(log, "wb") as out:
            # a new session, and output to a file: a server the block starts with '&' is stopped after it
            proc = subprocess.Popen(
                ["bash", "-e", "-c", shell_script(block)],
                cwd=self.cwd(block),
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                code = proc.wait(timeout=600)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        text = log.read_text(errors="replace")
        assert code == 0, f"{block.id} exited with {code} in {self.cwd(block)}:\n{text[-4000:]}"
        return text

    def run_python(self, block: Block, monkeypatch) -> str:
        for key in ("HOME", "HF_HOME", "DAGSTER_HOME", "AGIELO_STORAGE"):
            monkeypatch.setenv(key, self.env[key])
        monkeypatch.chdir(self.cwd(block))
        # the block as a file run as a script, its globals carried to the page's next python block (a tour)
        script = self.repo.parent / f"block-{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.namespace.update(runpy.run_path(str(script), init_globals=self.namespace, run_name="__main__"))
        return out.getvalue()


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    made: dict[str, Workspace] = {}

    def get(block: Block) -> Workspace:
        if block.page not in made:
            made[block.page] = Workspace(tmp_path_factory.mktemp(Path(block.page).stem), block.page)
        return made[block.page]

    return get


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in RUN])
def test_block_runs(block: Block, workspaces, monkeypatch, request):
    workspace = workspaces(block)
    # a block may build on the earlier blocks of its page that are not slow: those run first when deselected
    for earlier in RUN:
        if earlier.page == block.page and earlier.line < block.line and not earlier.slow and earlier not in workspace.done:
            workspace.run(earlier, monkeypatch)
    # the demo after the earlier blocks, as a reader runs them: an earlier `agielo run` on other storage would
    # withdraw the demo's benchmarks from its instance (pipeline.md:43 before :240 when run alone)
    if block.after_demo and not workspace.has_demo:
        workspace.add_demo(request.getfixturevalue("demo_run"))
    workspace.run(block, monkeypatch)
