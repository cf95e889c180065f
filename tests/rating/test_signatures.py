"""The engine's public signatures are typed: no ``Any`` in the annotations of a public function or method.

Read from the source (string annotations parsed too), so a module-level alias that hides ``Any``
(``Paths = str | Any``) counts where a signature names it. Where anything goes and is checked
inside, the honest type is ``object``.
"""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "agielo_dagster" / "rating"


def _names(node: ast.AST | None) -> set[str]:
    """Every name an annotation uses, string annotations included."""
    out: set[str] = set()
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                out |= _names(ast.parse(sub.value, mode="eval"))
            except SyntaxError:
                pass
    return out


def _public_functions(body: list[ast.stmt], prefix: str = ""):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.")


def any_in_public_signatures() -> list[str]:
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hiding = {"Any"}  # module-level aliases whose value uses Any
        for node in tree.body:
            target, value = None, None
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, value = node.target.id, node.value
            if target and value is not None and _names(value) & hiding:
                hiding.add(target)
        for name, fn in _public_functions(tree.body):
            a = fn.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
            for label, annotation in [*((p.arg, p.annotation) for p in params), ("return", fn.returns)]:
                if _names(annotation) & hiding:
                    found.append(f"{path.relative_to(ENGINE)}:{fn.lineno} {name}: {label}: {ast.unparse(annotation)}")
    return found


def test_no_public_engine_signature_says_any():
    assert any_in_public_signatures() == []


def test_the_walk_sees_an_alias_that_hides_any(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(
        'from typing import Any\nLoose = "int | Any"\n\n\ndef f(x: Loose) -> int:\n    return 1\n\n\n'
        "def _g(x: Any) -> Any:\n    return x\n\n\nclass C:\n    def m(self, **kw: Any) -> None:\n        pass\n"
    )
    monkeypatch.setattr(f"{__name__}.ENGINE", tmp_path)
    assert [row.split(" ", 1)[1] for row in any_in_public_signatures()] == ["f: x: Loose", "C.m: kw: Any"]
