"""Lambda entry point: the shared handler over the responder's pipeline."""

from fleet_remediation.core.handler import lambda_handler_for
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.service import RESPONDER

lambda_handler = lambda_handler_for("tts_reach_alarm", RESPONDER, TtsReachDependencies.from_environment)
