"""The pieces of ``DrainAwareLoad``: a cached reader of the task's own tags, a counter of slow VAD
inferences fed by a logging handler, and the load function that combines them.

This module runs inside the agent worker, not in Lambda: it depends only on the standard library
(and, for CPU, on whatever sampler the worker passes in).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

# Written by the worker drainer (functions/worker_drainer/decide/ladder.py keeps the same names; a test
# holds the two together).
STATE_TAG = "livekit-drainer:state"
DRAINING_STATE = "draining"
METADATA_ENV = "ECS_CONTAINER_METADATA_URI_V4"
# silero logs "inference is slower than realtime"; livekit-agents' own VAD "VAD inference is ...".
SLOW_INFERENCE_TEXT = "inference is slower than realtime"
VAD_LOGGERS = ("livekit.plugins.silero", "livekit.agents")
FULL_LOAD = 1.0


class TaskTagReader:
    """Reads ``${ECS_CONTAINER_METADATA_URI_V4}/taskWithTags`` (``TaskTags``), cached.

    Without the endpoint (not on ECS) or when it fails, the last known tags are kept: a metadata
    hiccup must neither start nor stop a drain. A reply without ``TaskTags`` is a task with no tags
    (the ECS agent leaves an empty map out), so a drain that was undone ends here too; only a reply
    whose ``Errors`` name ``TaskTags`` (the agent's tag lookup failed) keeps the last known tags.
    """

    def __init__(
        self,
        metadata_uri: str | None = None,
        *,
        cache_seconds: float = 15.0,
        timeout_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metadata_uri = metadata_uri if metadata_uri is not None else os.environ.get(METADATA_ENV)
        self.cache_seconds = cache_seconds
        self.timeout_seconds = timeout_seconds
        self.fetches = 0
        self._clock = clock
        self._tags: dict[str, str] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def tags(self) -> dict[str, str]:
        with self._lock:
            now = self._clock()
            fresh = self._fetched_at is not None and now - self._fetched_at < self.cache_seconds
            if self.metadata_uri and not fresh:
                self._fetched_at = now
                fetched = self._fetch()
                if fetched is not None:
                    self._tags = fetched
            return dict(self._tags)

    def _fetch(self) -> dict[str, str] | None:
        self.fetches += 1
        url = f"{str(self.metadata_uri).rstrip('/')}/taskWithTags"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_seconds) as response:
                body: Any = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, OSError, ValueError):
            return None
        if not isinstance(body, dict) or _tag_lookup_failed(body):
            return None
        tags = body.get("TaskTags", {})
        return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else None

    def draining(self) -> bool:
        return self.tags().get(STATE_TAG) == DRAINING_STATE


def _tag_lookup_failed(body: dict[str, Any]) -> bool:
    errors = body.get("Errors")
    return isinstance(errors, list) and any(
        isinstance(error, dict) and error.get("ErrorField") == "TaskTags" for error in errors
    )


class SlowInferenceCounter(logging.Handler):
    """Counts slow-inference warnings over a sliding window.

    Job processes' log records are forwarded to the worker's main process and handled there by the
    logger of the same name, so one handler in the main process sees every job's VAD warnings.
    """

    def __init__(self, window_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(level=logging.WARNING)
        self.window_seconds = window_seconds
        self._clock = clock
        self._seen: deque[float] = deque()
        self._lock_seen = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if SLOW_INFERENCE_TEXT in record.getMessage():
            with self._lock_seen:
                self._seen.append(self._clock())

    def per_minute(self) -> float:
        now = self._clock()
        with self._lock_seen:
            while self._seen and self._seen[0] < now - self.window_seconds:
                self._seen.popleft()
            return len(self._seen) * 60.0 / self.window_seconds

    def attach(self, logger_names: Iterable[str] = VAD_LOGGERS) -> SlowInferenceCounter:
        for name in logger_names:
            logging.getLogger(name).addHandler(self)
        return self

    def detach(self, logger_names: Iterable[str] = VAD_LOGGERS) -> None:
        for name in logger_names:
            logging.getLogger(name).removeHandler(self)


class DrainMarker(Protocol):
    def draining(self) -> bool: ...


class HasActiveJobs(Protocol):
    @property
    def active_jobs(self) -> list[Any]: ...


class DrainAwareLoad:
    """A ``load_fnc`` for livekit-agents' ``AgentServer`` (called with the server, in a thread).

    load = 1.0 while the task is marked draining; otherwise the highest of
      - jobs: active jobs / max_jobs (the incident's formula, without the 0.99 factor),
      - slow inference: warnings per minute / ``slow_per_minute_full`` (1.0 = stop taking jobs),
      - CPU: the sampler's utilisation (0..1), if one is given.
    With ``load_threshold`` below 1.0 any of them reaching it makes the worker unavailable.
    """

    def __init__(
        self,
        *,
        max_jobs: int = 2,
        tag_reader: DrainMarker | None = None,
        slow_inference: SlowInferenceCounter | None = None,
        slow_per_minute_full: float = 6.0,
        cpu_sampler: Callable[[], float] | None = None,
    ) -> None:
        if max_jobs < 1:
            raise ValueError("max_jobs must be at least 1")
        self.max_jobs = max_jobs
        self.tag_reader: DrainMarker = tag_reader or TaskTagReader()
        self.slow_inference = slow_inference or SlowInferenceCounter().attach()
        self.slow_per_minute_full = slow_per_minute_full
        self.cpu_sampler = cpu_sampler
        self.last_reason = "idle"

    def __call__(self, server: HasActiveJobs) -> float:
        if self.tag_reader.draining():
            self.last_reason = "task is marked draining"
            return FULL_LOAD
        parts = {
            "jobs": len(server.active_jobs) / self.max_jobs,
            "slow inference": self.slow_inference.per_minute() / self.slow_per_minute_full,
            "cpu": self.cpu_sampler() if self.cpu_sampler else 0.0,
        }
        reason, load = max(parts.items(), key=lambda item: item[1])
        self.last_reason = reason
        return max(0.0, min(FULL_LOAD, load))
