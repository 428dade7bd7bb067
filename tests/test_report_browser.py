"""The HTML reports in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright.

Each page must render with no console error and no request beyond its own file, show the source
lines and the findings linked both ways, and show a hostile file name, source and kernel output
as text: no script of theirs may run. A screenshot of each page is saved (KG_SCREENSHOTS=folder
keeps them; docs/img/ has the ones the docs show). Skips, saying why, where no browser can start.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.staff import batch
from grader.staff.batch import intake
from grader.cli import main

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
BROWSER = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# A file name cannot hold "/", so the name uses an attribute break-out; the source and the
# kernel's output carry the closing-script one.
HOSTILE_NAME = "<img src=x onerror=alert(1)>\"'&amp;.cu"
SCRIPT = "</script><script>alert(2)</script>"


def hostile_source() -> str:
    """missing_second_barrier.cu (a race between two lines) with hostile text in a comment and in its printf."""
    text = (ROOT / "reference/level2/wrong/missing_second_barrier.cu").read_text(encoding="utf-8")
    text = f"// {SCRIPT} \"quoted\" 'single' \x1b[31m\u202eevil\n" + text
    return text.replace("    float acc = 0.0f;\n", f'    float acc = 0.0f;\n    if (N == 1) printf("{SCRIPT}\\n");\n', 1)


def line_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if needle in line)


@pytest.fixture(scope="module")
def browser():
    """A Playwright-driven Chromium context with a fresh profile, or a skip that says why not."""
    if not Path(BROWSER).exists():
        pytest.skip(f"no browser: {BROWSER} is missing (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        pytest.skip("no browser driver: the playwright package is missing (pip install '.[test]')")
    profile = tempfile.mkdtemp(prefix="kg-chromium-")
    try:
        with sync_playwright() as p:
            try:
                context = p.chromium.launch_persistent_context(profile, executable_path=BROWSER, headless=True, args=FLAGS,
                                                               viewport={"width": 1200, "height": 900})
            except Error as exc:
                pytest.skip(f"Chromium would not start here: {str(exc).splitlines()[0]}")
            yield context
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def open_page(context, path: Path, shot: Path):
    """Open a page, recording console errors, script errors, dialogs and requests; save a screenshot."""
    page = context.new_page()
    seen = {"errors": [], "dialogs": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    return page, seen


def assert_clean(page, seen) -> None:
    assert seen["errors"] == [] and seen["dialogs"] == []
    assert all(u.startswith(("file://", "data:")) for u in seen["requests"]), seen["requests"]
    assert page.evaluate("document.scripts.length") == 0  # none of ours, none of theirs
    # Every image drew (an inline chart that failed to decode has no natural width).
    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")


def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("KG_SCREENSHOTS") or tmp_path)


def test_submission_page(browser, tmp_path: Path):
    source = hostile_source()
    sub = tmp_path / HOSTILE_NAME
    sub.write_text(source, encoding="utf-8")
    html = tmp_path / "r.html"
    run = CliRunner().invoke(main, [str(LEVEL2), str(sub), "--backend", "emu", "--seed", "1", "--html", str(html), "-q"])
    assert run.exit_code == 0, run.output
    page, seen = open_page(browser, html, shots(tmp_path) / "submission.png")
    assert_clean(page, seen)
    # The hostile name, source and output are on the page as text.
    assert page.inner_text("h1 .file") == HOSTILE_NAME
    assert SCRIPT in page.inner_text(f"#L{line_of(source, 'alert')}")
    assert "\u241b[31m[U+202E]evil" in page.inner_text("#L1")
    assert SCRIPT in page.inner_text("#summary")  # the kernel's printf
    # The race's two lines are marked, and linked both ways with the finding.
    write, read = line_of(source, "Bs[ty][tx] ="), line_of(source, "acc = fmaf")
    # (the missing second barrier is also a race inside a warp on the As tile: its own finding)
    finding = page.locator("li.finding", has_text="write-after-read race (")
    fid = finding.get_attribute("id")
    assert sorted(finding.locator("a.line-link").evaluate_all("as => as.map(a => a.getAttribute('href'))")) == \
        sorted([f"#L{write}", f"#L{read}"])
    for n in (write, read):
        row = page.locator(f"#L{n}")
        assert "flagged" in row.get_attribute("class")
        assert row.locator(f'a.mark[href="#{fid}"]').count() == 1
    assert page.locator("tr.flagged").count() == 3  # Bs's store, the read, and As's store (inside a warp)
    # Following the links moves between them.
    finding.locator(f'a[href="#L{read}"]').click()
    assert page.evaluate("location.hash") == f"#L{read}"
    page.locator(f'#L{read} a.mark[href="#{fid}"]').click()
    assert page.evaluate("location.hash") == f"#{fid}"
    # Per-line counts: the tile loads have sectors, the inner loop shared wavefronts.
    assert page.inner_text(f"#L{write} td:nth-child(2)").replace(",", "").isdigit()
    assert page.inner_text(f"#L{read} td:nth-child(4)").replace(",", "").isdigit()


@pytest.mark.slow  # a batch: three gradings, each in its own child
def test_class_page(browser, tmp_path: Path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / HOSTILE_NAME).write_text(hostile_source(), encoding="utf-8")
    shutil.copy(ROOT / "reference/level2/wrong/does_not_compile.cu", subs / "does_not_compile.cu")
    shutil.copy(ROOT / "reference/level2/solution.cu", subs / "copied.cu")
    out = tmp_path / "out"
    batch.run_batch(LEVEL2, subs, out, batch.Options(backend="emu", seed=1))
    page, seen = open_page(browser, out / "report.html", shots(tmp_path) / "class.png")
    assert_clean(page, seen)
    hostile_id = intake.sanitize_id(HOSTILE_NAME[:-3])
    assert HOSTILE_NAME in page.inner_text("#students")  # the submitted name, as text
    # Every student link leads to an existing page, which links back to the class page.
    links = page.locator("a.student").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert f"reports/{hostile_id}.html" in links
    for href in set(links):
        assert (out / href).is_file()
    failure = page.locator("li.failure", has_text="Races and barriers")
    assert failure.locator(f'a[href="reports/{hostile_id}.html"]').count() == 1
    assert "the reference solution" in page.inner_text("#similar")  # copied.cu
    assert page.locator("#scores img").count() == 1 and page.locator("#checks img").count() == 1
    failure.locator(f'a[href="reports/{hostile_id}.html"]').click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/reports/{hostile_id}.html")
    assert page.inner_text("h1 .file") == HOSTILE_NAME
    assert page.evaluate("document.scripts.length") == 0 and seen["dialogs"] == []
    assert page.locator("a", has_text="class report").get_attribute("href") == "../report.html"
    # A correct kernel's page has its traffic beside the reference's, as a chart that draws.
    page, seen = open_page(browser, out / "reports" / "copied.html", shots(tmp_path) / "copied.png")
    assert_clean(page, seen)
    assert page.locator("#charts img").count() >= 1
