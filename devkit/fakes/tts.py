"""Fake TTS engines implementing livekit-agents' ``tts.TTS`` interface, for tests of what the SDK
does with a TTS that speaks, one that never starts, and one whose provider fails.

They are non-streaming engines (``synthesize`` → ``ChunkedStream``), like many providers: the
SDK's own ``StreamAdapter`` splits the text into sentences and calls ``synthesize`` per sentence.
"""

from __future__ import annotations

import asyncio
import math
import struct
import uuid
from typing import Never

from livekit.agents import APIConnectOptions, APIStatusError, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS

SAMPLE_RATE = 24000
CHUNK_SECONDS = 0.1


def _tone(seconds: float, frequency: float = 440.0) -> bytes:
    """16-bit mono PCM of a quiet sine tone."""
    samples = int(SAMPLE_RATE * seconds)
    return struct.pack(
        f"<{samples}h",
        *(int(3000 * math.sin(2 * math.pi * frequency * n / SAMPLE_RATE)) for n in range(samples)),
    )


# No events beyond the base interface's own (metrics_collected, error).
class _FakeTTS(tts.TTS[Never]):
    def __init__(self) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False), sample_rate=SAMPLE_RATE, num_channels=1
        )

    @property
    def provider(self) -> str:
        return "devkit"


class StreamingTTS(_FakeTTS):
    """Speaks ``seconds_per_sentence`` of tone per sentence, in 100 ms chunks paced at real time,
    the first one after ``first_audio_delay`` seconds."""

    def __init__(self, *, seconds_per_sentence: float = 1.0, first_audio_delay: float = 0.2) -> None:
        super().__init__()
        self.seconds_per_sentence = seconds_per_sentence
        self.first_audio_delay = first_audio_delay

    @property
    def model(self) -> str:
        return "streaming"

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _StreamingChunkedStream(tts=self, input_text=text, conn_options=conn_options)


class _StreamingChunkedStream(tts.ChunkedStream):
    _tts: StreamingTTS

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(
            request_id=uuid.uuid4().hex, sample_rate=SAMPLE_RATE, num_channels=1, mime_type="audio/pcm"
        )
        await asyncio.sleep(self._tts.first_audio_delay)
        chunk = _tone(CHUNK_SECONDS)
        for _ in range(max(1, round(self._tts.seconds_per_sentence / CHUNK_SECONDS))):
            output_emitter.push(chunk)
            await asyncio.sleep(CHUNK_SECONDS)
        output_emitter.flush()


class StallingTTS(_FakeTTS):
    """Accepts the text and never sends a byte of audio, like a provider stream that hangs (or a
    worker too starved of CPU to read it)."""

    @property
    def model(self) -> str:
        return "stalling"

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _StallingChunkedStream(tts=self, input_text=text, conn_options=conn_options)


class _StallingChunkedStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(
            request_id=uuid.uuid4().hex, sample_rate=SAMPLE_RATE, num_channels=1, mime_type="audio/pcm"
        )
        await asyncio.Event().wait()  # ends only when the SDK cancels the synthesis


class FailingTTS(_FakeTTS):
    """Answers every request with a provider outage (HTTP 503, not retried)."""

    @property
    def model(self) -> str:
        return "failing"

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _FailingChunkedStream(tts=self, input_text=text, conn_options=conn_options)


class _FailingChunkedStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        raise APIStatusError("provider unavailable", status_code=503, retryable=False)
