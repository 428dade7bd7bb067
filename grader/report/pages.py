"""Rendering the report's Jinja2 templates (package data in grader/report/templates) and writing pages.

Autoescape is on for every template: any value a template prints is HTML-escaped unless it is
marked safe, and nothing student-supplied is ever marked safe. The page's Content-Security-Policy
(in base.html.j2) allows no script, no network and no images but data: URIs, so even a mistake in
escaping could not run code or fetch anything.
"""
from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The templates' environment: autoescape, undefined names are errors, no stray whitespace."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("grader.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _number
    env.globals["style"] = resources.files("grader.report").joinpath("templates/report.css").read_text(encoding="utf-8")
    return env


def _number(value: float) -> str:
    """1,450 for a count; 17.65 for a score (at most two decimals, no trailing zeros)."""
    value = float(value)
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def render(template: str, **values: Any) -> str:
    """One template rendered with `values`."""
    return environment().get_template(template).render(**values)


def write_page(html: str, path: Path) -> Path:
    """Write a page atomically (a temporary file beside it, then a rename), readable by others."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
