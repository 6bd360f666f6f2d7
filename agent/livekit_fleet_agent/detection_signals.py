"""Detection signals written from livekit-agents' own session events (signals as
data: contract/signals.py).

Stock livekit-agents writes none of the TTS lines the TTS-reach detection counts. One line in the
agent's entrypoint adds them::

    session = AgentSession(...)
    emit_detection_signals(session)
    await session.start(agent=..., room=ctx.room)

It follows each response (one ``SpeechHandle``: ``session.say`` or a generated reply): it starts
when the speech becomes the session's current speech (a speech queued behind another is not
started yet, so its wait is not counted); its first audio frame plays when the agent state turns to
``speaking`` (livekit-agents sets it when the audio output reports playback of this speech's first
frame). What it writes (decision 0015, compact agent signals):

- ``agent_tts_summary``, one line per ``summary_interval_seconds`` (30 s) and at the session's end,
  only when something happened: ``responses`` started, ``first_frames`` played, ``late_frames``
  (first frames that came after their response's timeout line: slow, not silent; written only when
  non-zero) and ``tts_endpoint`` (the group label, see ``tts_endpoint_label``). Metric filters sum
  these fields; the drainer's per-task look reads them directly.
- ``tts_first_audio_timeout`` (WARNING), one line per event, when no first frame follows within
  ``first_audio_timeout_seconds`` (``reason: deadline``) or the TTS fails unrecoverably first
  (``reason: tts_error``): a silent TTS is a countable event, and the responder names the failing
  rooms from these lines.

``line_format="per_response"`` writes the former per-response lines instead of the summary
(``agent_response_started``, ``tts_node_first_audio_frame`` with ``first_audio_seconds``; about
ten times the bytes): for agents whose detection is configured for per-response lines.

A response interrupted or ended before its first frame without a TTS failure (a reply that only
called a tool) writes no timeout. Every per-event line carries ``job_id``, ``room``, ``room_id`` and
``worker_id`` of the job (when run inside one) and the ``speech_id``; a summary carries ``job_id``
and ``room``.

The message texts default to the detection's signal catalog (``SignalCatalog.default()`` in the
shared Lambda layer; a unit test holds the two equal). This module ships inside the agent image,
not in the Lambda, so it does not import the catalog: a team that changed the texts in
``cdk.json`` passes the same texts here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from livekit_fleet_agent.signal_context import TTS_ENDPOINT_ENV as TTS_ENDPOINT_ENV
from livekit_fleet_agent.signal_context import (
    TTS_ENDPOINT_FIELD,
    Counts,
    SessionLike,
    SpeechHandleLike,
    job_context_fields,
    tts_endpoint_label,
)

RESPONSE_STARTED_TEXT = "agent_response_started"
FIRST_AUDIO_FRAME_TEXT = "tts_node_first_audio_frame"
FIRST_AUDIO_TIMEOUT_TEXT = "tts_first_audio_timeout"
SUMMARY_TEXT = "agent_tts_summary"
DEFAULT_FIRST_AUDIO_TIMEOUT_SECONDS = 10.0
DEFAULT_SUMMARY_INTERVAL_SECONDS = 30.0
SUMMARY = "summary"
SUMMARY_KEYS = frozenset({"job_id", "room", TTS_ENDPOINT_FIELD})
PER_RESPONSE = "per_response"
LOGGER_NAME = "livekit_fleet_agent.signals"
# How often a queued speech is checked for having become the current one (the SDK has no event
# for it); only speeches waiting in the queue are checked.
QUEUE_POLL_SECONDS = 0.05


@dataclass
class _Response:
    speech_id: str
    source: str
    started_at: float | None = None
    frame_written: bool = False
    timeout_written: bool = False
    # Set when waiting for the first frame is over: a frame, a TTS failure, or the speech ended.
    resolved: asyncio.Event = field(default_factory=asyncio.Event)


class SignalEmitter:
    """Writes the detection lines for one ``AgentSession``; detaches itself when it closes."""

    def __init__(
        self,
        session: SessionLike,
        *,
        first_audio_timeout_seconds: float = DEFAULT_FIRST_AUDIO_TIMEOUT_SECONDS,
        response_started_text: str = RESPONSE_STARTED_TEXT,
        first_audio_frame_text: str = FIRST_AUDIO_FRAME_TEXT,
        first_audio_timeout_text: str = FIRST_AUDIO_TIMEOUT_TEXT,
        summary_text: str = SUMMARY_TEXT,
        summary_interval_seconds: float = DEFAULT_SUMMARY_INTERVAL_SECONDS,
        line_format: str = SUMMARY,
        tts_endpoint: str | None = None,
        job_fields: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if not first_audio_timeout_seconds > 0:
            raise ValueError("first_audio_timeout_seconds must be positive")
        if not summary_interval_seconds > 0:
            raise ValueError("summary_interval_seconds must be positive")
        if line_format not in (SUMMARY, PER_RESPONSE):
            raise ValueError(f"line_format must be {SUMMARY!r} or {PER_RESPONSE!r}")
        texts = (response_started_text, first_audio_frame_text, first_audio_timeout_text, summary_text)
        if any(not text for text in texts) or len(set(texts)) != len(texts):
            raise ValueError("the signal texts must be non-empty and distinct")
        self.first_audio_timeout_seconds = first_audio_timeout_seconds
        self.summary_text = summary_text
        self.summary_interval_seconds = summary_interval_seconds
        self.line_format = line_format
        self.response_started_text = response_started_text
        self.first_audio_frame_text = first_audio_frame_text
        self.first_audio_timeout_text = first_audio_timeout_text
        self._session = session
        self._fields = dict(job_fields) if job_fields is not None else job_context_fields()
        endpoint = tts_endpoint if tts_endpoint is not None else tts_endpoint_label(session)
        if endpoint:
            self._fields[TTS_ENDPOINT_FIELD] = endpoint
        self._counts = Counts()
        self._summarizer: asyncio.Task[None] | None = None
        self._logger = logger or logging.getLogger(LOGGER_NAME)
        self._responses: dict[str, _Response] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, Callable[[Any], None]] = {
            "speech_created": self._on_speech_created,
            "agent_state_changed": self._on_agent_state_changed,
            "error": self._on_error,
            "close": self._on_close,
        }
        self._attached = False

    @classmethod
    def attach(cls, session: SessionLike, **options: Any) -> SignalEmitter:
        """Create an emitter for ``session`` and subscribe it to the session's events."""
        emitter = cls(session, **options)
        for event, handler in emitter._handlers.items():
            session.on(event, handler)
        emitter._attached = True
        if emitter.line_format == SUMMARY:
            emitter._summarizer = asyncio.get_running_loop().create_task(
                emitter._summarize(), name="signal-emitter-summary"
            )
        return emitter

    @property
    def attached(self) -> bool:
        return self._attached

    @property
    def tasks(self) -> frozenset[asyncio.Task[None]]:
        """The tasks following responses (one per response waiting to start or for its first frame)."""
        return frozenset(self._tasks)

    def detach(self) -> None:
        """Unsubscribe, cancel every pending timer and write what the summary still holds (done
        automatically when the session closes)."""
        if self._attached:
            for event, handler in self._handlers.items():
                self._session.off(event, handler)
            self._attached = False
        for task in self._tasks:
            task.cancel()
        if self._summarizer is not None:
            self._summarizer.cancel()
            self._summarizer = None
        self._responses.clear()
        self.flush()

    def flush(self) -> None:
        """Write the summary of what happened since the last one, if anything did."""
        counts, self._counts = self._counts, Counts()
        if self.line_format == SUMMARY and (counts.responses or counts.first_frames or counts.late_frames):
            # The job and room name the summary; the room and worker sids stay on per-event lines.
            named = {key: value for key, value in self._fields.items() if key in SUMMARY_KEYS}
            self._logger.info(self.summary_text, extra={**named, **counts.fields()})

    async def _summarize(self) -> None:
        while True:
            await asyncio.sleep(self.summary_interval_seconds)
            self.flush()

    # --- session events ----------------------------------------------------------------------------
    def _on_speech_created(self, event: Any) -> None:
        handle: SpeechHandleLike = event.speech_handle
        response = _Response(speech_id=handle.id, source=str(getattr(event, "source", "")))
        self._responses[handle.id] = response

        def ended(_: Any) -> None:
            response.resolved.set()
            self._responses.pop(handle.id, None)

        handle.add_done_callback(ended)
        task = asyncio.get_running_loop().create_task(
            self._follow(response, handle), name=f"signal-emitter-{handle.id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_agent_state_changed(self, event: Any) -> None:
        if event.new_state != "speaking":
            return
        response = self._current_response()
        if response is None or response.frame_written:
            return
        self._start(response)
        assert response.started_at is not None  # set by _start
        response.frame_written = True
        response.resolved.set()
        self._counts.first_frames += 1
        self._counts.late_frames += response.timeout_written
        if self.line_format == PER_RESPONSE:
            self._write(
                logging.INFO,
                self.first_audio_frame_text,
                response,
                first_audio_seconds=round(self._now() - response.started_at, 3),
            )

    def _on_error(self, event: Any) -> None:
        error = getattr(event, "error", None)
        if getattr(error, "type", None) != "tts_error" or getattr(error, "recoverable", True):
            return
        response = self._current_response()
        if response is not None:
            # A synthesis can fail before the queue check has seen its speech become current.
            self._start(response)
            self._time_out(response, reason="tts_error")

    def _on_close(self, _: Any) -> None:
        self.detach()

    # --- one response ------------------------------------------------------------------------------
    async def _follow(self, response: _Response, handle: SpeechHandleLike) -> None:
        while self._session.current_speech is not handle:
            if handle.done():
                return  # interrupted or dropped while queued: it never started
            await asyncio.sleep(QUEUE_POLL_SECONDS)
        self._start(response)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.first_audio_timeout_seconds):
                await response.resolved.wait()
            return
        if not handle.interrupted:
            self._time_out(response, reason="deadline")

    def _current_response(self) -> _Response | None:
        speech = self._session.current_speech
        return self._responses.get(speech.id) if speech is not None else None

    def _start(self, response: _Response) -> None:
        if response.started_at is not None:
            return
        response.started_at = self._now()
        self._counts.responses += 1
        if self.line_format == PER_RESPONSE:
            self._write(logging.INFO, self.response_started_text, response, source=response.source)

    def _time_out(self, response: _Response, *, reason: str) -> None:
        if response.frame_written or response.timeout_written or response.started_at is None:
            return
        response.timeout_written = True
        response.resolved.set()
        self._write(
            logging.WARNING,
            self.first_audio_timeout_text,
            response,
            reason=reason,
            timeout_seconds=self.first_audio_timeout_seconds,
            waited_seconds=round(self._now() - response.started_at, 3),
        )

    def _write(self, level: int, text: str, response: _Response, **values: Any) -> None:
        self._logger.log(level, text, extra={**self._fields, "speech_id": response.speech_id, **values})

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()


def emit_detection_signals(session: SessionLike, **options: Any) -> SignalEmitter:
    """The one line for an agent's entrypoint: ``emit_detection_signals(session)``.

    Options: ``first_audio_timeout_seconds`` (default 10 s), ``summary_interval_seconds`` (30 s),
    ``tts_endpoint`` (default ``tts_endpoint_label(session)``), ``line_format`` ("summary" or
    "per_response") and the texts (``summary_text``, ``first_audio_timeout_text``; with per-response
    lines ``response_started_text``, ``first_audio_frame_text``) when the environment's
    ``detection.signals`` in cdk.json uses other ones.
    """
    return SignalEmitter.attach(session, **options)
