"""A toy harness format, written as a new one would be: one module, registered with one line in READERS.

Its logs are ``incoming/toy/**/<name>.tsv``, one sample a line: ``model<TAB>task<TAB>sample id<TAB>score``.
"""

from __future__ import annotations

from collections.abc import Sequence

from agielo_dagster.domain.contract import MAX_LOG_BYTES
from agielo_dagster.domain.harness.common import (
    HarnessReader,
    HarnessResult,
    Reader,
    build_upload,
    check_duplicates,
    decode,
    error,
    guarded,
    read_bytes,
)


class Toy(HarnessReader):
    """One ``.tsv`` file is one drop; it may hold several (model, task) pairs."""

    name = "toy"

    def drop_of(self, parts: Sequence[str]) -> str | None:
        return "/".join(parts) if parts[-1].endswith(".tsv") else None

    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        result = HarnessResult()
        for path in paths:
            with guarded(path, result, "toy_unreadable"):
                samples: dict[tuple[str, str], dict[str, float]] = {}
                for number, line in enumerate(decode(read_bytes(read, path, max_bytes), path).splitlines(), 1):
                    fields = line.split("\t")
                    if len(fields) != 4:
                        result.errors.append(error(path, "toy_fields", "a line needs 4 tab-separated fields", line=number))
                        continue
                    model, task, sample, score = fields
                    samples.setdefault((model, task), {})[sample] = float(score)
                for (model, task), scores in sorted(samples.items()):
                    result.uploads.append(
                        build_upload(
                            harness=self.name,
                            original_benchmark=task,
                            original_agent=model,
                            test_case_ids=list(scores),
                            metrics={"score": list(scores.values())},
                            sources=[path],
                        )
                    )
        result.uploads, duplicates = check_duplicates(result.uploads)
        result.errors.extend(duplicates)
        return result
