"""Detection signals written from livekit-agents' own session events (signals as
data: contract/signals.py).

Stock livekit-agents writes none of the TTS lines the TTS-reach detection counts. One line in the
agent's entrypoint adds them::

    session = AgentSession(...)
    emit_detection_signals(session)
    await session.start(agent=..., room=ctx.room)

Per response (one ``SpeechHandle``: ``session.say`` or a generated reply) it writes, through the
standard ``logging`` module (so livekit-agents' JSON formatter renders them as one object a line):

- ``agent_response_started`` when the response starts: the moment the speech becomes the session's
  current speech (a speech queued behind another is not started yet, so its wait is not counted);
- ``tts_node_first_audio_frame`` when its first audio frame plays: the agent state turns to
  ``speaking``, which livekit-agents sets when the audio output reports playback of this speech's
  first frame (carries ``first_audio_seconds`` since the start);
- ``tts_first_audio_timeout`` when no first frame follows within ``first_audio_timeout_seconds``
  (``reason: deadline``), or when the TTS fails unrecoverably first (``reason: tts_error``), so a
  silent TTS is a countable event rather than a missing one.

A response interrupted or ended before its first frame without a TTS failure (a reply that only
called a tool) writes no timeout. Every line carries ``job_id``, ``room``, ``room_id`` and
``worker_id`` of the job (when run inside one) and the ``speech_id``.

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
from typing import Any, Protocol

RESPONSE_STARTED_TEXT = "agent_response_started"
FIRST_AUDIO_FRAME_TEXT = "tts_node_first_audio_frame"
FIRST_AUDIO_TIMEOUT_TEXT = "tts_first_audio_timeout"
DEFAULT_FIRST_AUDIO_TIMEOUT_SECONDS = 10.0
LOGGER_NAME = "livekit_fleet_agent.signals"
# How often a queued speech is checked for having become the current one (the SDK has no event
# for it); only speeches waiting in the queue are checked.
QUEUE_POLL_SECONDS = 0.05


class SpeechHandleLike(Protocol):
    """The public part of livekit-agents' ``SpeechHandle`` the emitter reads."""

    @property
    def id(self) -> str: ...

    @property
    def interrupted(self) -> bool: ...

    def done(self) -> bool: ...

    def add_done_callback(self, callback: Callable[[Any], None]) -> None: ...


class SessionLike(Protocol):
    """The public part of livekit-agents' ``AgentSession`` the emitter uses."""

    @property
    def current_speech(self) -> Any: ...

    def on(self, event: Any, callback: Any = None) -> Any: ...

    def off(self, event: Any, callback: Any) -> None: ...


@dataclass
class _Response:
    speech_id: str
    source: str
    started_at: float | None = None
    frame_written: bool = False
    timeout_written: bool = False
    # Set when waiting for the first frame is over: a frame, a TTS failure, or the speech ended.
    resolved: asyncio.Event = field(default_factory=asyncio.Event)


def job_context_fields() -> dict[str, str]:
    """``job_id``, ``room``, ``room_id``, ``worker_id`` of the running livekit-agents job (the same
    keys as the worker's ``received job request`` line), or nothing outside a job."""
    # Imported here so that ``livekit_fleet_agent`` (DrainAwareLoad) imports with the standard
    # library alone.
    from livekit.agents import get_job_context

    ctx = get_job_context(required=False)
    if ctx is None:
        return {}
    fields = {
        "job_id": ctx.job.id,
        "room": ctx.job.room.name,
        "room_id": ctx.job.room.sid,
        "worker_id": ctx.worker_id,
    }
    return {key: value for key, value in fields.items() if value}


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
        job_fields: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if not first_audio_timeout_seconds > 0:
            raise ValueError("first_audio_timeout_seconds must be positive")
        texts = (response_started_text, first_audio_frame_text, first_audio_timeout_text)
        if any(not text for text in texts) or len(set(texts)) != len(texts):
            raise ValueError("the three signal texts must be non-empty and distinct")
        self.first_audio_timeout_seconds = first_audio_timeout_seconds
        self.response_started_text = response_started_text
        self.first_audio_frame_text = first_audio_frame_text
        self.first_audio_timeout_text = first_audio_timeout_text
        self._session = session
        self._fields = dict(job_fields) if job_fields is not None else job_context_fields()
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
        return emitter

    @property
    def attached(self) -> bool:
        return self._attached

    @property
    def tasks(self) -> frozenset[asyncio.Task[None]]:
        """The tasks following responses (one per response waiting to start or for its first frame)."""
        return frozenset(self._tasks)

    def detach(self) -> None:
        """Unsubscribe and cancel every pending timer (done automatically when the session closes)."""
        if self._attached:
            for event, handler in self._handlers.items():
                self._session.off(event, handler)
            self._attached = False
        for task in self._tasks:
            task.cancel()
        self._responses.clear()

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

    Options: ``first_audio_timeout_seconds`` (default 10 s) and the three texts
    (``response_started_text``, ``first_audio_frame_text``, ``first_audio_timeout_text``) when the
    environment's ``detection.signals`` in cdk.json uses other ones.
    """
    return SignalEmitter.attach(session, **options)
