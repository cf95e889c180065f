"""The explorer pages' own files (explorer.css, explorer.html, explorer.js, the index's explorer_index.* and the widgets
both share, explorer.kit.js, beside the modules): they parse, the scripts are valid JavaScript, and every element a
page's script looks up exists (tests/test_layers.py: a wheel carries them)."""

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agielo_dagster.domain.explorer import render_explorer

PAGE = Path(__file__).resolve().parents[2] / "agielo_dagster" / "domain"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Elements(HTMLParser):
    """Every element closed in the order it was opened, and the ids seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open, self.ids, self.problems = [], [], []

    def handle_starttag(self, tag, attrs):
        self.ids += [value for name, value in attrs if name == "id"]
        if tag not in VOID:
            self.open.append((tag, self.getpos()))

    def handle_endtag(self, tag):
        if not self.open or self.open[-1][0] != tag:
            self.problems.append(f"</{tag}> at {self.getpos()} closes {self.open[-1] if self.open else 'nothing'}")
        else:
            self.open.pop()


def parsed(text: str) -> Elements:
    parser = Elements()
    parser.feed(text)
    parser.close()
    return parser


node = pytest.mark.skipif(shutil.which("node") is None, reason="no node here: the browser tests catch script errors")


PAGES = [("explorer.html", "explorer.js"), ("explorer_index.html", "explorer_index.js")]


@node
@pytest.mark.parametrize("script", ["explorer.kit.js", "explorer.js", "explorer_index.js"])
def test_each_script_is_valid_javascript(script):
    check = subprocess.run(["node", "--check", str(PAGE / script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


@node
def test_the_check_fails_on_broken_javascript(tmp_path):
    broken = tmp_path / "broken.js"
    broken.write_text((PAGE / "explorer.js").read_text(encoding="utf-8").replace("function (", "function ((", 1))
    assert subprocess.run(["node", "--check", str(broken)], capture_output=True).returncode != 0  # the check can fail


@pytest.mark.parametrize(("markup", "script"), PAGES)
def test_the_markup_closes_every_element_and_holds_what_the_script_looks_up(markup, script):
    script = (PAGE / "explorer.kit.js").read_text(encoding="utf-8") + (PAGE / script).read_text(encoding="utf-8")
    body = parsed((PAGE / markup).read_text(encoding="utf-8"))
    assert body.problems == [] and body.open == []
    assert len(body.ids) == len(set(body.ids))
    created = set(re.findall(r'\bid: "([^"]+)"', script))  # elements the script makes itself
    wanted = set(re.findall(r'getElementById\("([^"]+)"\)', script))
    assert wanted and wanted - created - set(body.ids) == {"explorer-data"}  # the data block the page's renderer adds


@pytest.mark.parametrize("styles", ["explorer.css", "explorer_index.css"])
def test_the_styles_are_balanced_rules(styles):
    css = (PAGE / styles).read_text(encoding="utf-8")
    depth = 0
    for char in css:
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth in (0, 1)  # no nesting, no stray brace
    assert depth == 0
    for selector, declarations in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        assert selector.strip(), declarations
        for declaration in filter(str.strip, declarations.split(";")):
            assert re.fullmatch(r"\s*[a-z-]+\s*:\s*\S.*", declaration, re.S), (selector, declaration)


def test_the_rendered_page_is_well_formed():
    page = parsed(render_explorer("quiz", {"agent_id": ["a"], "mu": [1500.0]}, {"test_case_id": ["t"], "mu": [1500.0]}))
    assert page.problems == [] and page.open == []
    assert "explorer-data" in page.ids
