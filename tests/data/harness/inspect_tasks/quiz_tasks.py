"""Small in-memory Inspect AI tasks for agielo's harness tests, run with ``--model mockllm/<name>``.

The solvers set ``state.output`` themselves and never call ``generate`` (which would fetch a tokenizer from the
internet, out of reach here). A model's skill decides, per sample and epoch, whether it answers right.
"""

import hashlib

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score, Target, match, mean, scorer
from inspect_ai.solver import TaskState, solver

SKILL = {"mockllm/alpha": 0.3, "mockllm/beta": 0.6, "mockllm/gamma": 0.9}


def _draw(*parts) -> float:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 16**8


@solver
def answer_by_skill():
    async def solve(state: TaskState, generate):
        skill = SKILL.get(str(state.model), 0.5)
        right = _draw(state.model, state.sample_id, state.epoch) < skill
        state.output = ModelOutput.from_content(model=str(state.model), content=state.target.text if right else "no idea")
        return state

    return solve


@scorer(metrics=[mean()])
def points():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=10.0 if state.output.completion == target.text else round(10 * _draw("p", state.sample_id), 1))

    return score


def _dataset(n: int) -> MemoryDataset:
    return MemoryDataset([Sample(id=f"q{i:02d}", input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(n)])


@task
def arith_quiz():
    return Task(name="arith quiz", dataset=_dataset(12), solver=answer_by_skill(), scorer=match(), epochs=2)


@task
def graded():
    return Task(dataset=_dataset(8), solver=answer_by_skill(), scorer=[points(), match()])


@solver
def fails_on(sample_ids: tuple[str, ...]):
    async def solve(state: TaskState, generate):
        if str(state.sample_id) in sample_ids:
            raise RuntimeError(f"tool crashed on {state.sample_id}")
        state.output = ModelOutput.from_content(model=str(state.model), content=state.target.text)
        return state

    return solve


@task
def flaky():
    """One sample errors; fail_on_error=False keeps the run going, so the log succeeds with an unscored sample."""
    return Task(dataset=_dataset(4), solver=fails_on(("q02",)), scorer=match(), fail_on_error=False)


@task
def broken():
    """Every sample errors: the run fails and the log's status is 'error'."""
    return Task(dataset=_dataset(2), solver=fails_on(("q00", "q01")), scorer=match())
