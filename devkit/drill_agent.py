"""The worker of ``make drill``: a livekit-agents worker as a team runs one, with the product's two
agent-side lines (the detection-signal emitter and the drill hook) and stand-ins for the engines.

Run through the SDK's own CLI (JSON logs on stdout, as the awslogs driver ships them)::

    DRILL_AGENT_NAME=drill python -m livekit.agents start devkit/drill_agent.py --url ws://...

Per session: a TTS stand-in (``StreamingTTS``, tone paced at real time) answers every
``DRILL_TURN_SECONDS`` while the caller is there; a VAD stand-in reads the caller's audio frame by
frame, does a fixed amount of work per frame, and warns as the silero plugin does ("inference is
slower than realtime", ``delay`` in seconds) while the job process is behind (``StallClock``: it got
no CPU for longer than the threshold). The drill hook reads this task's tags through
``ECS_CONTAINER_METADATA_URI_V4``: a tts-silence marker withholds the first audio; an
abandoned-session marker keeps the session in its room after the caller leaves.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from livekit import rtc
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, ModelSettings, room_io
from livekit.agents.voice import SpeechHandle

from devkit.fakes.tts import StreamingTTS
from livekit_fleet_agent import TaskTagReader, emit_detection_signals
from livekit_fleet_agent.drill import DrillHook, withhold_first_audio

AGENT_NAME_ENV = "DRILL_AGENT_NAME"
# Real seconds; make drill's clock runs faster than real time (tools/drill.py says how much).
# A turn outlasts the first-audio timeout twice over: a reply unplayed at the next turn is silent, not slow.
TURN_SECONDS = float(os.environ.get("DRILL_TURN_SECONDS", "4.0"))
FIRST_AUDIO_TIMEOUT_SECONDS = float(os.environ.get("DRILL_FIRST_AUDIO_TIMEOUT_SECONDS", "2.0"))
SUMMARY_SECONDS = float(os.environ.get("DRILL_SUMMARY_SECONDS", "1.0"))
# The VAD stand-in warns past this lag, as silero does past its threshold, once per this much audio.
VAD_LAG_SECONDS = 0.2
VAD_WARN_EVERY_SECONDS = 0.1
VAD_WORK_ITERATIONS = 2_000
TICK_SECONDS = 0.02
SESSION_CLOSED = "drill_agent_session_closed"

logger = logging.getLogger("livekit.plugins.silero")
drill_logger = logging.getLogger("devkit.drill_agent")
DRILLS = DrillHook(TaskTagReader(cache_seconds=0.3))


class Tutor(Agent):
    """Answers in tone; its TTS node carries the drill hook as the drill page wires it."""

    async def tts_node(
        self, text: AsyncIterable[str], model_settings: ModelSettings
    ) -> AsyncIterator[rtc.AudioFrame]:
        async for frame in withhold_first_audio(Agent.default.tts_node(self, text, model_settings), DRILLS):
            yield frame


class StallClock:
    """How far this job process is behind: a 20 ms ticker that finds it ran late by more than
    ``VAD_LAG_SECONDS`` (the process got no CPU, or was stopped) marks the VAD as that far behind,
    catching up at the speed it processes the backlog. The sender's pauses do not count: the caller's
    audio is not its clock."""

    def __init__(self) -> None:
        self.catch_up_until = 0.0

    def behind(self) -> float:
        return max(0.0, self.catch_up_until - time.monotonic())

    async def tick(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(TICK_SECONDS)
            late = time.monotonic() - before - TICK_SECONDS
            if late > VAD_LAG_SECONDS:
                self.catch_up_until = max(self.catch_up_until, time.monotonic() + late)


async def vad_stand_in(track: rtc.Track, stalls: StallClock) -> None:
    """Per frame of the caller's audio: fixed work, and, while the process is behind, silero's
    warning with the delay, once per ``VAD_WARN_EVERY_SECONDS`` of audio."""
    heard = warned = 0.0
    async for event in rtc.AudioStream(track):
        _ = sum(range(VAD_WORK_ITERATIONS))
        heard += event.frame.samples_per_channel / event.frame.sample_rate
        delay = stalls.behind()
        if delay > VAD_LAG_SECONDS and heard - warned >= VAD_WARN_EVERY_SECONDS:
            warned = heard
            logger.warning("inference is slower than realtime", extra={"delay": round(delay, 3)})


def _on_caller_audio(tasks: set[asyncio.Task[None]], stalls: StallClock) -> Any:
    def subscribed(track: rtc.Track, *_: Any) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO:
            task = asyncio.ensure_future(vad_stand_in(track, stalls))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    return subscribed


server = AgentServer(
    host="127.0.0.1",
    port=0,
    # Jobs, not host CPU: eight workers share two cores, and the drill starves one on purpose.
    load_fnc=lambda agent_server: len(agent_server.active_jobs) / 10,
    load_threshold=0.99,
    num_idle_processes=1,
    drain_timeout=5,
    shutdown_process_timeout=5.0,
)


@server.rtc_session(agent_name=os.environ.get(AGENT_NAME_ENV, "drill-agent"))
async def entrypoint(ctx: JobContext) -> None:
    session: AgentSession[Any] = AgentSession(tts=StreamingTTS(seconds_per_sentence=0.5))
    emit_detection_signals(
        session,
        first_audio_timeout_seconds=FIRST_AUDIO_TIMEOUT_SECONDS,
        summary_interval_seconds=SUMMARY_SECONDS,
    )
    stalls = StallClock()
    vad_tasks: set[asyncio.Task[None]] = {asyncio.ensure_future(stalls.tick())}
    ctx.room.on("track_subscribed", _on_caller_audio(vad_tasks, stalls))
    closed = asyncio.Event()
    session.on("close", lambda _event: closed.set())
    options = room_io.RoomOptions(close_on_disconnect=DRILLS.close_on_disconnect())
    await session.start(agent=Tutor(instructions="Answer in tone."), room=ctx.room, room_options=options)
    turn = 0
    reply: SpeechHandle | None = None
    while not closed.is_set():
        if ctx.room.remote_participants:  # an abandoned session speaks to nobody, so it says nothing
            turn += 1
            if reply is not None and not reply.done():
                # The caller heard nothing and speaks again: their turn interrupts the silent reply.
                reply.interrupt()
            reply = session.say(f"Answer number {turn}.")
        try:
            await asyncio.wait_for(closed.wait(), TURN_SECONDS)
        except TimeoutError:
            continue
    for task in vad_tasks:
        task.cancel()
    drill_logger.info(SESSION_CLOSED, extra={"job_id": ctx.job.id, "room": ctx.room.name})
    ctx.shutdown("caller left")
