"""Agent-side cooperation with the fleet remediation (the incident report's
remedy P2, docs/incident-2026-09-15.md).

A LiveKit agents worker adopts it as its ``load_fnc``::

    from livekit_fleet_agent import DrainAwareLoad

    load = DrainAwareLoad(max_jobs=2)
    server = AgentServer(load_fnc=load, load_threshold=0.99)

It reports full load while the worker's own ECS task carries the drainer's ``draining`` tag, and
folds measured pressure (slow VAD inference, CPU) into the job-count load, so a worker that cannot
keep up stops taking new jobs while its running sessions continue.

And, with one line in the entrypoint, it writes the TTS detection lines from the session's own
events (``emit_detection_signals(session)``, see ``detection_signals``): a compact summary per
interval and one line per first-audio timeout.
"""

from livekit_fleet_agent.detection_signals import (
    DEFAULT_FIRST_AUDIO_TIMEOUT_SECONDS,
    DEFAULT_SUMMARY_INTERVAL_SECONDS,
    FIRST_AUDIO_FRAME_TEXT,
    FIRST_AUDIO_TIMEOUT_TEXT,
    RESPONSE_STARTED_TEXT,
    SUMMARY_TEXT,
    TTS_ENDPOINT_ENV,
    SignalEmitter,
    emit_detection_signals,
)
from livekit_fleet_agent.load import (
    DRAINING_STATE,
    STATE_TAG,
    DrainAwareLoad,
    SlowInferenceCounter,
    TaskTagReader,
)

# The release it belongs to: the same version as the remediation package (tests/unit/test_release.py).
__version__ = "0.2.0"

__all__ = [
    "DEFAULT_FIRST_AUDIO_TIMEOUT_SECONDS",
    "DEFAULT_SUMMARY_INTERVAL_SECONDS",
    "DRAINING_STATE",
    "FIRST_AUDIO_FRAME_TEXT",
    "FIRST_AUDIO_TIMEOUT_TEXT",
    "RESPONSE_STARTED_TEXT",
    "STATE_TAG",
    "SUMMARY_TEXT",
    "TTS_ENDPOINT_ENV",
    "DrainAwareLoad",
    "SignalEmitter",
    "SlowInferenceCounter",
    "TaskTagReader",
    "__version__",
    "emit_detection_signals",
]
