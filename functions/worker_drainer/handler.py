"""Lambda entry point: one invocation of the drainer's stages (``work.DrainerStages``), run by the
shared pipeline (``core.pipeline.Pipeline.handle``) with exactly one report."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.handler import lambda_entry
from fleet_remediation.core.pipeline import Pipeline
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.work import DrainerStages

DRAINER = Pipeline(DrainerStages())


@lambda_entry(DrainerDependencies.from_environment)
def lambda_handler(
    event: Any, context: LambdaContext, dependencies: Callable[[], DrainerDependencies]
) -> dict[str, Any]:
    return DRAINER.handle(event, context, dependencies)
