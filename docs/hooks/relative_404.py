"""MkDocs hook: the 404 page links relative to the site's root folder, where it lies, instead of to
the server's root. MkDocs writes it root-absolute (``/assets/...``) when no ``site_url`` is set, which
breaks a site hosted under a sub-path or opened from disk; a team's site has no fixed URL."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOTED = re.compile(r'((?:href|src)=")/(?!/)')


def on_post_build(config: Any) -> None:
    page = Path(config["site_dir"]) / "404.html"
    if page.is_file():
        page.write_text(ROOTED.sub(r"\1", page.read_text(encoding="utf-8")), encoding="utf-8")
