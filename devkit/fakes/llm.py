"""A scripted LLM implementing livekit-agents' ``llm.LLM`` interface: it answers every request with
the same text, streamed word by word, so a session's replies take the SDK's LLM → TTS pipeline
(``generate_reply``) as they do with a real model."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Never

from livekit.agents import APIConnectOptions, llm
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, NotGivenOr

SECONDS_PER_WORD = 0.02


class ScriptedLLM(llm.LLM[Never]):
    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def provider(self) -> str:
        return "devkit"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> llm.LLMStream:
        return _ScriptedStream(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options)


class _ScriptedStream(llm.LLMStream):
    _llm: ScriptedLLM

    async def _run(self) -> None:
        request_id = uuid.uuid4().hex
        for word in self._llm.reply.split(" "):
            await asyncio.sleep(SECONDS_PER_WORD)
            self._event_ch.send_nowait(
                llm.ChatChunk(id=request_id, delta=llm.ChoiceDelta(role="assistant", content=f"{word} "))
            )
