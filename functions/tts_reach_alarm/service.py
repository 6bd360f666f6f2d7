"""The TTS-reach responder's pipeline: the shared invocation (``core.pipeline``) over the responder's
stages (``work.ResponderStages``)."""

from fleet_remediation.core.pipeline import Pipeline
from tts_reach_alarm.work import ResponderStages

RESPONDER = Pipeline(ResponderStages())
run_tts_reach = RESPONDER.invoke
