"""The book's ``{fold}`` directive (book/_ext/ace_fold.py), built by Sphinx on a two-section page: the rest of the
section after the marker, subsections included, is inside a closed ``<details>``; the next section is not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "book" / "_ext" / "ace_fold.py"

CONF = f'''
import importlib.util
extensions = ["myst_parser"]
def setup(app):
    spec = importlib.util.spec_from_file_location("ace_fold", {str(EXTENSION)!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.setup(app)
'''

PAGE = """# Page

## A

Shown first.

```{fold} Show the rest of A & more
```

Folded text.

### A.1

Folded subsection.

## B

Shown again.
"""


def test_fold_puts_the_rest_of_its_section_in_a_closed_details(tmp_path):
    pytest.importorskip("myst_parser")
    from sphinx.application import Sphinx

    (tmp_path / "conf.py").write_text(CONF)
    (tmp_path / "index.md").write_text(PAGE)
    app = Sphinx(str(tmp_path), str(tmp_path), str(tmp_path / "_build"), str(tmp_path / "_doctrees"), "html",
                 status=None, warningiserror=True)  # fmt: skip
    app.build()
    html = (tmp_path / "_build" / "index.html").read_text()
    start = html.index('<details class="ace-fold-section"><summary>Show the rest of A &amp; more</summary>')
    end = html.index("</details>", start)
    assert html.index("Shown first.") < start < html.index("Folded text.") < html.index("Folded subsection.") < end
    assert html.index("Shown again.") > end and " open" not in html[start : start + 40]
