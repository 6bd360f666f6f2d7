"""What the tests synthesize the standalone app with: the example company's environments
(examples/standalone/environments.json, read explicitly: the app itself never defaults to them) and
the feature flags the root cdk.json pins."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from livekit_fleet_remediation.config import context_from_file
from livekit_fleet_remediation.standalone import pinned_context

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CONFIG = REPO / "examples" / "standalone" / "environments.json"
ROOT_CDK_JSON = REPO / "cdk.json"


def example_context() -> dict[str, Any]:
    """The pinned flags and the example ``environments``, as one CDK context."""
    return {**pinned_context(ROOT_CDK_JSON), **context_from_file(EXAMPLE_CONFIG)}


def staging_with_drills(drills: dict[str, Any]) -> dict[str, Any]:
    """The example context with ``staging``'s ``drills`` section set to ``drills``."""
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["drills"] = drills
    return context
