"""Lambda entry point: one invocation of the reaper's stages (``work.ReaperStages``), run by the
shared pipeline (``core.pipeline.Pipeline.handle``) with exactly one report."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.handler import lambda_entry
from fleet_remediation.core.pipeline import Pipeline
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.work import ReaperStages

REAPER = Pipeline(ReaperStages())


@lambda_entry(ReaperDependencies.from_environment)
def lambda_handler(
    event: Any, context: LambdaContext, dependencies: Callable[[], ReaperDependencies]
) -> dict[str, Any]:
    return REAPER.handle(event, context, dependencies)
