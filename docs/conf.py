"""Sphinx configuration of nytro's documentation (build: sphinx-build -W --keep-going -b html docs out)."""
import os
import re
import sys
from importlib.metadata import PackageNotFoundError, version as package_version

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_scripts"))

import make_options  # noqa: E402  (docs/_scripts, put on the path just above)
import make_performance  # noqa: E402

project = "nytro"
author = "the nytro developers"
copyright = "2026, the nytro developers"
try:
    release = package_version("nytro")
except PackageNotFoundError:  # building against an uninstalled tree
    release = "unknown"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax served from the built site rather than a CDN, so the maths renders offline.
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_scripts", "options_table.md", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.codeobj.json"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 0
suppress_warnings = ["myst.xref_missing"]

autosummary_generate = True
templates_path = ["_templates"]
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()


sphinx_gallery_conf = {
    "examples_dirs": os.path.join(HERE, "..", "examples", "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "matplotlib_animations": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"nytro {release}"
html_theme_options = {"show_toc_level": 2, "navigation_with_keys": False}
html_static_path = []


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\\\w])([A-Za-z]\w*?)_(?![\w`])")
_DEFINITION = re.compile(r"^(\s*[\w*][\w, *]*\s:\s?)(.*)$")


def _escape(text: str) -> str:
    """coef_ -> coef\\_ outside literals, so reStructuredText does not read a reference."""
    parts = _LITERAL.split(text)
    return "".join(part if i % 2 else _TRAILING_UNDERSCORE.sub(r"\1\\_", part) for i, part in enumerate(parts))


def escape_fitted_attributes(app, what, name, obj, options, lines):
    """The docstrings name fitted attributes (coef_, lambda_) in plain text, as scikit-learn's
    do; escape their trailing underscore, except in a numpydoc definition's name."""
    for i, line in enumerate(lines):
        head = _DEFINITION.match(line)
        lines[i] = head.group(1) + _escape(head.group(2)) if head else _escape(line)


def setup(app):
    app.connect("autodoc-process-docstring", escape_fitted_attributes, priority=100)
    # docs/performance.md is written from benchmarks/results/<claim>/ at every build.
    app.connect("builder-inited", lambda app: make_performance.write(
        os.path.join(HERE, "..", "benchmarks", "results"), os.path.join(HERE, "performance.md")))
    # docs/options_table.md is written from nytro.options (the parameters' one declaration).
    app.connect("builder-inited", lambda app: make_options.write(os.path.join(HERE, "options_table.md")))
