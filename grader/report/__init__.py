"""HTML reports: one self-contained page per graded submission, and one per class (a batch).

    submission_page.page_html(results_document, source)    -> the page of one submission
    class_page.write_reports(out_folder, exercise, entries) -> reports/<student>.html and report.html
    page_stream.PageStream(out_folder).submit(entry)        -> a student's page while the batch grades

Pages are Jinja2 templates (package data in templates/) with autoescape; charts are matplotlib
SVG (the optional `report` extra) inside the page as data: URIs. No page loads anything from the
network or runs any script.
"""
from __future__ import annotations

from .pages import write_page
from .submission_page import page_html

__all__ = ["page_html", "write_page"]
