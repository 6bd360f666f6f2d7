"""The wheel's long description: README.md with its relative links made absolute against the
project's ``Source`` URL (``[project.urls]``), so they work on the package index. A hatchling
metadata hook (``[tool.hatch.metadata.hooks.custom]``): no build plugin to install."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

# A Markdown link's target that has no scheme and is not an in-page anchor: relative to the README.
RELATIVE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


def absolute_links(markdown: str, base: str) -> str:
    return RELATIVE_LINK.sub(lambda link: f"]({base}/{link.group(1).removeprefix('./')})", markdown)


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        base = f"{metadata['urls']['Source'].rstrip('/')}/blob/main"
        readme = (Path(self.root) / "README.md").read_text(encoding="utf-8")
        metadata["readme"] = {"content-type": "text/markdown", "text": absolute_links(readme, base)}
