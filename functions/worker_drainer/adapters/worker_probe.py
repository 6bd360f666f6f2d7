"""Read a worker's active jobs from the agents worker's own HTTP endpoint (``GET /worker``).

livekit-agents serves ``WorkerInfo`` there as proto3 JSON (``active_jobs``, ``worker_load``...);
proto3 JSON leaves out zero values, so a missing ``active_jobs`` means none. The function can only
reach the task inside its VPC; when it cannot, the answer is None and the caller falls back to logs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Protocol

from worker_drainer.adapters.ecs_tasks import EcsTask


class WorkerProbe(Protocol):
    calls: int

    def active_jobs(self, task: EcsTask) -> int | None: ...


class HttpWorkerProbe:
    def __init__(
        self,
        port: int,
        timeout_seconds: float,
        endpoint_for: Callable[[EcsTask], str | None] | None = None,
    ) -> None:
        self.port = port
        self.timeout_seconds = timeout_seconds
        self.calls = 0
        self._endpoint_for = endpoint_for or self._private_ip_endpoint

    def _private_ip_endpoint(self, task: EcsTask) -> str | None:
        return f"http://{task.private_ip}:{self.port}" if task.private_ip else None

    def active_jobs(self, task: EcsTask) -> int | None:
        base = self._endpoint_for(task)
        if base is None:
            return None
        self.calls += 1
        try:
            with urllib.request.urlopen(
                f"{base.rstrip('/')}/worker", timeout=self.timeout_seconds
            ) as response:
                body = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, OSError, ValueError):
            return None
        if not isinstance(body, dict):
            return None
        try:
            # Numbers may arrive as floats (1.0) or, for 64-bit proto fields, as strings.
            return int(float(body.get("active_jobs", 0)))
        except (TypeError, ValueError):
            return None
