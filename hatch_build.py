"""The wheel's long description: README.md with each relative link written as its text and the file
it names (``docs/construct.md``), since the package index resolves a relative link against nothing
and the project names no public home (``[project.urls]`` is left out rather than filled with a
placeholder). A hatchling metadata hook (``[tool.hatch.metadata.hooks.custom]``): no build plugin to
install."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

# A Markdown link whose target has no scheme and is not an in-page anchor: relative to the README.
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#)(?:\./)?([^)\s]+)\)")


def without_relative_links(markdown: str) -> str:
    return RELATIVE_LINK.sub(lambda link: f"{link.group(1)} (`{link.group(2)}`)", markdown)


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        readme = (Path(self.root) / "README.md").read_text(encoding="utf-8")
        metadata["readme"] = {"content-type": "text/markdown", "text": without_relative_links(readme)}
