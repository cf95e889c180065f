"""No code path deserializes or executes data: no pickle, eval, exec, unsafe YAML or shell.

The checks read the code's syntax tree, not its text: a test that asserts a page contains no
``eval(`` is a string, not a call, and must not count.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = [
    p for folder in ("agielo_dagster", "assets", "resources", "benchmarks", "tests") for p in (REPO / folder).rglob("*.py")
]

FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_ATTRIBUTE_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("pd", "read_pickle"),
    ("pandas", "read_pickle"),
    ("np", "load"),  # allow_pickle lives there; arrays come from parquet
}
SAFE_YAML_CALLS = {"safe_load", "safe_dump", "safe_load_all", "parse"}  # parse yields events, builds no objects


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def findings(source: str) -> list[tuple[int, str]]:
    """Each forbidden construct in ``source`` as (line, rule)."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            hits += [(node.lineno, f"imports {a.name}") for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            hits.append((node.lineno, f"imports from {node.module}"))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if len(name) == 1 and name[0] in FORBIDDEN_CALLS:
                hits.append((node.lineno, f"calls {name[0]}"))
            if name[-2:] in FORBIDDEN_ATTRIBUTE_CALLS:
                hits.append((node.lineno, f"calls {'.'.join(name)}"))
            if len(name) >= 2 and name[-2] == "yaml" and name[-1] not in SAFE_YAML_CALLS | {"YAMLError"}:
                hits.append((node.lineno, f"calls yaml.{name[-1]}"))
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
                    hits.append((node.lineno, "runs a shell"))
    return hits


def test_sources_found():
    assert len(SOURCES) > 20


def test_the_check_finds_each_forbidden_construct():
    bad = "\n".join(
        [
            "import pickle",
            "from marshal import loads",
            "eval('1')",
            "exec(code)",
            "yaml.load(text)",
            "yaml.unsafe_load(text)",
            "subprocess.run(cmd, shell=True)",
            "os.system('ls')",
            "pd.read_pickle(path)",
        ]
    )
    assert [line for line, _ in findings(bad)] == list(range(1, 10))
    assert findings("x = 'eval(1)'\nyaml.safe_load(t)\nsubprocess.run(['ls'], shell=False)\nmodel.eval()") == []


def test_no_forbidden_constructs():
    hits = [f"{path.relative_to(REPO)}:{line}: {rule}" for path in SOURCES for line, rule in findings(path.read_text())]
    assert hits == []


HOSTILE = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(2)>", "q\"uote's & <!-- x", "<b>bold</b>"]


def test_the_report_shows_hostile_ids_and_descriptions_as_text_never_as_markup():
    """The report page (benchmark_reports/<b>.html): every id, name and the description are escaped."""
    import html
    from html.parser import HTMLParser

    import pandas as pd

    from agielo_dagster.domain.report import render_report

    gaps = pd.DataFrame({"agent_id": HOSTILE, "rating": [1500.0, 1400.0, 1300.0, 1200.0], "hardest_test_case_rating": 1900.0})
    hardest = pd.DataFrame({"test_case_id": HOSTILE, "rating": [1900.0, 1800.0, 1700.0, 1600.0]})
    reliability = pd.DataFrame({"mae": [0.1], "rho_agents": [0.9], "rho_test_cases": [0.8]})
    inputs = pd.DataFrame({"agent_id": HOSTILE, "source_path": HOSTILE, "source_version": ["sha256:x"] * 4})
    page = render_report("quiz", {}, gaps, hardest, reliability, inputs, "0.1.0", "sha256:d", description=HOSTILE[0])
    assert "<script" not in page and "<img" not in page and "<b>" not in page and "<!--" not in page

    class Markup(HTMLParser):
        tags: set[str] = set()
        handlers: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)
            self.handlers += [name for name, _ in attrs if name.startswith("on")]

    parsed = Markup()
    parsed.feed(page)
    assert parsed.handlers == [] and not parsed.tags & {"script", "img", "b", "iframe", "a"}, parsed.tags
    for evil in HOSTILE:
        assert html.escape(evil, quote=False) in page or html.escape(evil) in page, evil  # shown, character for character


def test_every_test_security_md_names_exists():
    """SECURITY.md's ``file::test`` references (``::test`` continues the last file) name real tests."""
    import re

    text = (REPO / "SECURITY.md").read_text()
    missing, current, seen = [], None, 0
    for ref in re.findall(r"`((?:tests/[\w/]+\.py)?(?:::\w+)*)`", text):
        path, _, name = ref.partition("::")
        name = name.rsplit("::", 1)[-1]  # Class::test: the method
        if path:
            current = REPO / path
            if not current.exists():
                missing.append(path)
        if name:
            seen += 1
            source = current.read_text() if current and current.exists() else ""
            if not re.search(rf"^\s*def {name}\(", source, re.M):
                missing.append(f"{current.relative_to(REPO) if current else '?'}::{name}")
    assert seen >= 40 and missing == [], missing


def test_security_md_gives_the_code_s_figures_and_policies():
    from agielo_dagster.domain import contract
    from agielo_dagster.domain.harness import archive
    from agielo_dagster.domain.query import MAX_QUERY_CHARS, MAX_QUERY_DEPTH

    text = " ".join((REPO / "SECURITY.md").read_text().split())
    assert f"at most **{contract.MAX_JSON_DEPTH}** deep" in text  # README once said 64; the code says 32
    assert f"{contract.MAX_LOG_BYTES >> 20} MiB by default" in text
    assert f"at most {contract.MAX_SPEC_BYTES >> 10} KiB" in text
    assert f"at most {contract.MAX_NAME_LENGTH} characters" in text
    assert f"at most {contract.MAX_COLUMNS} columns" in text
    assert f"the decoded table ≤ {contract.PARQUET_EXPANSION} × the limit" in text
    assert f"plus {contract.PARQUET_EXPANSION} × the upload limit and at least {contract.DECODE_MEMORY_FLOOR >> 20} MiB" in text
    assert f"{contract.DECODE_CPU_SECONDS} s + {contract.DECODE_CPU_SECONDS_PER_MIB} s a MiB of the file" in text
    assert f"{contract.DECODE_WALL_FACTOR} × the CPU cap + 10 s" in text
    assert f"one per {contract.MIN_ROW_BYTES} bytes" in text
    assert f"≤ {archive.MAX_ARCHIVE_MEMBERS:,} members" in text
    assert f"central directory ≤ {archive.MAX_CENTRAL_DIRECTORY_BYTES >> 20} MiB" in text
    assert f"at most {MAX_QUERY_CHARS:,} characters, nesting {MAX_QUERY_DEPTH}" in text
    # the re-upload policy is what the ledger does (one row per file, its current version's outcome)
    assert "A rejected new version withdraws the agent" in text and "last accepted version is *not* kept" in text
    assert "leaves the agent's last accepted version in place" not in text
