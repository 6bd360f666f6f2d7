"""MkDocs hook: a page nobody listed in ``nav`` joins its folder's section instead of failing the build.

Several people add pages under ``docs/`` (decisions, how-tos); the nav in ``mkdocs.yml`` orders the
pages a newcomer reads first, and every other page still appears, under the section of its folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A folder's pages go to this top-level section of the nav (created at the end when missing).
SECTIONS = {
    "concepts": "Concepts",
    "operations": "Operations",
    "runbooks": "Operations",
    "reference": "Reference",
    "development": "Development",
    "decisions": "Decisions",
}
OTHER = "More"
NOT_PAGES = ("hooks/",)


def listed_pages(nav: Any) -> set[str]:
    """Every page path the nav names, at any depth."""
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, dict):
        return set().union(*(listed_pages(value) for value in nav.values()))
    if isinstance(nav, list):
        return set().union(*(listed_pages(item) for item in nav))
    return set()


def unlisted_pages(docs_dir: Path, nav: list[Any]) -> list[str]:
    listed = listed_pages(nav)
    pages = (path.relative_to(docs_dir).as_posix() for path in docs_dir.rglob("*.md"))
    return sorted(page for page in pages if page not in listed and not page.startswith(NOT_PAGES))


def section(nav: list[Any], title: str) -> list[Any]:
    """The entries of the top-level section ``title``, appended to the nav when it has none."""
    for item in nav:
        if isinstance(item, dict) and isinstance(item.get(title), list):
            entries: list[Any] = item[title]
            return entries
    entries = []
    nav.append({title: entries})
    return entries


def complete_nav(docs_dir: Path, nav: list[Any]) -> list[Any]:
    for page in unlisted_pages(docs_dir, nav):
        folder = page.split("/", 1)[0] if "/" in page else ""
        section(nav, SECTIONS.get(folder, OTHER)).append(page)
    return nav


def on_config(config: Any) -> Any:
    if config["nav"] is not None:
        config["nav"] = complete_nav(Path(config["docs_dir"]), config["nav"])
    return config
