"""Lambda entry point: one invocation of the responder's stages (``work.ResponderStages``), run by the
shared pipeline (``core.pipeline.Pipeline.handle``) with exactly one report."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.handler import lambda_entry
from fleet_remediation.core.pipeline import Pipeline
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.work import ResponderStages

RESPONDER = Pipeline(ResponderStages())


@lambda_entry(TtsReachDependencies.from_environment)
def lambda_handler(
    event: Any, context: LambdaContext, dependencies: Callable[[], TtsReachDependencies]
) -> dict[str, Any]:
    return RESPONDER.handle(event, context, dependencies)
