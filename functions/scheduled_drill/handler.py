"""Lambda entry point: one invocation of the scheduled drill's stages (``work.DrillStages``), run by
the shared pipeline (``core.pipeline.Pipeline.handle``) with exactly one report."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.handler import lambda_entry
from fleet_remediation.core.pipeline import Pipeline
from scheduled_drill.dependencies import DrillDependencies
from scheduled_drill.work import DrillStages

SCHEDULED_DRILL = Pipeline(DrillStages())


@lambda_entry(DrillDependencies.from_environment)
def lambda_handler(
    event: Any, context: LambdaContext, dependencies: Callable[[], DrillDependencies]
) -> dict[str, Any]:
    return SCHEDULED_DRILL.handle(event, context, dependencies)
