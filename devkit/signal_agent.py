"""A livekit-agents worker whose sessions speak a script through a fake TTS, with the detection-signal
emitter attached by its one line. Run it as production runs an agent, through the SDK's own CLI
(JSON logs on stdout)::

    SIGNAL_AGENT_NAME=signals python -m livekit.agents start devkit/signal_agent.py \
        --url ws://127.0.0.1:7880 --api-key devkey --api-secret secret

Each dispatch's metadata is the script (JSON):

- ``tts``: ``streaming``, ``stalling`` or ``failing`` (``devkit/fakes/tts.py``);
- ``say``: texts for ``session.say``, queued at once;
- ``llm_reply``: if set, the session has a scripted LLM answering with this text, and one
  ``generate_reply`` follows the texts;
- ``first_audio_timeout_seconds``: the emitter's timeout;
- ``hold_seconds``: how long the session stays open at most before it is closed;
- ``seconds_per_sentence``: audio per sentence of the streaming engine;
- ``detach_after_seconds``: detach the emitter by hand that long after the texts are queued;
- ``line_format``, ``summary_interval_seconds``, ``tts_endpoint``: the emitter's options.

The agent's TTS node carries the drill hook as a team wires it (``withhold_first_audio``): with
``ECS_CONTAINER_METADATA_URI_V4`` pointing at a task metadata stand-in whose tags hold a tts-silence
marker, no audio frame reaches the room.

When the session has closed, the job writes ``signal_agent_session_closed`` with the emitter's
state, so a test can see that no timer outlived the session.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Never

from livekit import rtc
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, ModelSettings
from livekit.agents.tts import TTS
from livekit.agents.types import NOT_GIVEN

import livekit_fleet_agent
from devkit.fakes.llm import ScriptedLLM
from devkit.fakes.tts import FailingTTS, StallingTTS, StreamingTTS
from livekit_fleet_agent import emit_detection_signals
from livekit_fleet_agent.drill import DrillHook, withhold_first_audio

logger = logging.getLogger("devkit.signal_agent")
AGENT_NAME_ENV = "SIGNAL_AGENT_NAME"
# Long enough for a cancelled follower to finish; a timer that was not cancelled runs for seconds.
TASK_DRAIN_SECONDS = 1.0


@dataclass(frozen=True)
class Script:
    tts: str
    say: list[str] = field(default_factory=list)
    first_audio_timeout_seconds: float = 10.0
    hold_seconds: float = 5.0
    seconds_per_sentence: float = 1.0
    detach_after_seconds: float | None = None
    llm_reply: str | None = None
    line_format: str = "summary"
    summary_interval_seconds: float = 30.0
    tts_endpoint: str | None = None

    @classmethod
    def from_metadata(cls, metadata: str) -> Script:
        return cls(**json.loads(metadata))

    def make_tts(self) -> TTS[Never]:
        if self.tts == "streaming":
            return StreamingTTS(seconds_per_sentence=self.seconds_per_sentence)
        if self.tts == "stalling":
            return StallingTTS()
        if self.tts == "failing":
            return FailingTTS()
        raise ValueError(f"unknown tts {self.tts!r}")


DRILLS = DrillHook()


class ScriptReader(Agent):
    """Reads the script aloud; its TTS node is where a team wires the drill hook."""

    async def tts_node(
        self, text: AsyncIterable[str], model_settings: ModelSettings
    ) -> AsyncIterator[rtc.AudioFrame]:
        async for frame in withhold_first_audio(Agent.default.tts_node(self, text, model_settings), DRILLS):
            yield frame


def _job_count_load(agent_server: AgentServer) -> float:
    # The default load is host CPU, which on a shared test machine can pass the threshold and make
    # the worker refuse its jobs; what the tests exercise is the session, not the load.
    return len(agent_server.active_jobs) / 10


server = AgentServer(
    host="127.0.0.1",
    port=0,
    load_fnc=_job_count_load,
    load_threshold=0.99,
    # One process kept warm, so a job starts without waiting for one to spawn (and the first
    # reservation does not count as the whole threshold, as it does with none).
    num_idle_processes=1,
    drain_timeout=5,
    shutdown_process_timeout=5.0,
)


@server.rtc_session(agent_name=os.environ.get(AGENT_NAME_ENV, "signal-agent"))
async def entrypoint(ctx: JobContext) -> None:
    script = Script.from_metadata(ctx.job.metadata)
    session: AgentSession[Any] = AgentSession(
        tts=script.make_tts(), llm=ScriptedLLM(script.llm_reply) if script.llm_reply else NOT_GIVEN
    )
    emitter = emit_detection_signals(
        session,
        first_audio_timeout_seconds=script.first_audio_timeout_seconds,
        line_format=script.line_format,
        summary_interval_seconds=script.summary_interval_seconds,
        tts_endpoint=script.tts_endpoint,
    )
    await session.start(agent=ScriptReader(instructions="Read the script aloud."), room=ctx.room)

    handles = [session.say(text) for text in script.say]
    if script.llm_reply:
        handles.append(session.generate_reply(user_input="Can you help me?"))
    spoken = [asyncio.ensure_future(handle.wait_for_playout()) for handle in handles]
    if script.detach_after_seconds is not None:
        await asyncio.sleep(script.detach_after_seconds)
        emitter.detach()
    await asyncio.wait(spoken, timeout=script.hold_seconds)
    await session.aclose()
    for waiting in spoken:
        waiting.cancel()

    left: set[asyncio.Task[None]] = set()
    if emitter.tasks:
        _, left = await asyncio.wait(emitter.tasks, timeout=TASK_DRAIN_SECONDS)
    logger.info(
        "signal_agent_session_closed",
        extra={
            "job_id": ctx.job.id,
            "emitter_attached": emitter.attached,
            "emitter_tasks_left": len(left),
            # Where the emitter was imported from: the checkout, or a wheel installed into a venv.
            "emitter_package": livekit_fleet_agent.__file__,
        },
    )
    ctx.shutdown("script done")
