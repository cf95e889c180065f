"""The fenced code blocks of README.md and docs/*.md, with what each needs to run (docs/testing.md).

A block's info string names its language. Shell (``bash``, ``sh``, ``console``) and ``python`` blocks are
commands: their first line states where they run, ``# from the repository root``, ``# in <folder>`` (relative
to the repository root) or ``# in any folder``, optionally followed by ``, after the demo`` (the storage and
instance that ``agielo demo`` leaves in the repository root). Every other language is data.

An HTML comment on the line before a block qualifies it:
``<!-- docs: no-run: <reason> -->`` (a command the tests cannot run here, and why),
``<!-- docs: slow -->`` (run in the default pass only, not in ``-m 'not slow'``),
``<!-- docs: file <path> -->`` (a data block written to ``<path>`` in the page's workspace before the next command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = {"bash", "sh", "console"}
COMMANDS = SHELL | {"python"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+)(?P<info>.*)$")
MARK = re.compile(r"^\s*<!--\s*docs:\s*(?P<what>.*?)\s*-->\s*$")
WHERE = re.compile(
    r"^#\s*(?:(?P<root>from the repository root)|(?P<any>in any folder)|in (?P<dir>[\w./-]+))(?P<demo>, after the demo)?"
)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marks: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_command(self) -> bool:
        return self.lang in COMMANDS and self.sketch is None

    @property
    def sketch(self) -> str | None:
        """What a sketch of source files stands for (a recipe's shape, run elsewhere), None when not a sketch."""
        for mark in self.marks:
            if mark.startswith("sketch"):
                return mark.removeprefix("sketch").lstrip(":").strip()
        return None

    @property
    def no_run(self) -> str | None:
        """The reason given for not running this block, '' when marked without one, None when it runs."""
        for mark in self.marks:
            if mark.startswith("no-run"):
                return mark.removeprefix("no-run").lstrip(":").strip()
        return None

    @property
    def file(self) -> str | None:
        return next((m.removeprefix("file").strip() for m in self.marks if m.startswith("file ")), None)

    @property
    def where(self) -> re.Match | None:
        first = next((line for line in self.text.splitlines() if line.strip()), "")
        return WHERE.match(first.removeprefix("$ ").strip())

    @property
    def after_demo(self) -> bool:
        return bool(self.where and self.where["demo"])

    @property
    def slow(self) -> bool:
        return "slow" in self.marks or self.after_demo


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(ROOT).as_posix()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        info = opening["info"].strip()
        marks = []
        j = i - 1
        while j >= 0 and (mark := MARK.match(lines[j])):
            marks.insert(0, mark["what"])
            j -= 1
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        lang = info.split()[0] if info else ""
        out.append(Block(page, i - len(body), lang, "\n".join(body) + "\n", tuple(marks)))
        i += 1
    return out


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks_of(path)]


def shell_script(block: Block) -> str:
    """The block as a bash script; a ``console`` block's commands are its ``$ `` lines (the rest is output)."""
    if block.lang != "console":
        return block.text
    return "\n".join(line[2:] for line in block.text.splitlines() if line.startswith("$ ")) + "\n"
