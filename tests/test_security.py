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
