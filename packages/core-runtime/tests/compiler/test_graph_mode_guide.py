"""The graph-mode guide's examples run as written (docs/graph-mode.md, one namespace in
order, as a reader would paste them), so the guide cannot drift from the code."""

import linecache
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[4] / "docs" / "graph-mode.md"


@pytest.mark.skipif(not GUIDE.exists(), reason="needs the repository's docs/ folder")
def test_graph_mode_guide_examples_run(capsys):
    text = GUIDE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks and len(blocks) == text.count("```python")  # every block found, none skipped
    namespace: dict = {}
    for i, code in enumerate(blocks):
        name = f"{GUIDE.name} block {i}"
        # registered as IPython registers a cell: graph mode reads a construct's source
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        exec(compile(code, name, "exec"), namespace)
    printed = capsys.readouterr().out
    assert "select" in printed  # the TracingError message says what to do
