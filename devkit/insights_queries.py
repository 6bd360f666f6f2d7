"""The Logs Insights queries a function will send, built from its deployed settings at their longest, so
a template check can hold each to StartQuery's 10,000 characters.

Inputs that are not settings take the longest the services allow, or, where none is set, a stated
assumption: a log stream name of 512 characters (``CreateLogStream``'s maximum); a job id of LiveKit's
form (``AJ_`` and 12 characters; an assumption: LiveKit sets no maximum); a Lambda request id (a UUID).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.signals import SignalCatalog, SignalSettings
from fleet_remediation.core.messages import report_query
from tts_reach_alarm.analysis import MAX_LISTED_JOBS, job_outcomes_query, job_rooms_query
from worker_drainer.adapters.worker_logs import job_sightings_query, stats_query, tts_outcomes_query
from worker_drainer.read.task_reach_query import task_reach_query

LONGEST_STREAM = "s" * 512
LIVEKIT_JOB_ID = "AJ_" + "x" * 12
LAMBDA_REQUEST_ID = "00000000-0000-0000-0000-000000000000"
# A fleet large enough that naming every stream would not fit, so the query falls back to a prefix.
SIGHTED_STREAMS = [f"ecs/agent/{index:032x}" for index in range(2000)]


def queries_sent(variables: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, query) for every query the function with these environment variables sends."""
    queries = [("report", report_query(LAMBDA_REQUEST_ID))]
    if isinstance(variables.get("DETECTION"), str):
        catalog = SignalCatalog.from_settings(
            DetectionConfig.model_validate_json(variables["DETECTION"]).signals
        )
        queries += [
            ("job outcomes", job_outcomes_query(catalog)),
            ("failing jobs", job_outcomes_query(catalog, failing_only=True)),
            ("job rooms", job_rooms_query([LIVEKIT_JOB_ID] * MAX_LISTED_JOBS)),
        ]
    if isinstance(variables.get("SIGNALS"), str):
        catalog = SignalCatalog.from_settings(SignalSettings.model_validate(json.loads(variables["SIGNALS"])))
        queries += [
            ("slow VAD stats", stats_query(catalog.slow_vad)),
            ("task reach", task_reach_query(catalog)),
            ("TTS outcomes", tts_outcomes_query(catalog, LONGEST_STREAM)),
            ("job sightings", job_sightings_query(SIGHTED_STREAMS)),
        ]
    return queries
