"""The replay's ECS, built from the log streams (``replay_world``'s docstring says how it behaves):
``SimulatedEcsService`` and the agents worker's ``/worker`` probe, ``SimulatedWorkerProbe``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from fleet_remediation.contract.naming import task_id_from_log_stream
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_timing import Deployments
from livekit_fleet_remediation.offline.replay_world import LoggedJob, SimulatedLiveKit
from worker_drainer.adapters.ecs_tasks import (
    RUNNING,
    EcsTask,
    ServiceCapacity,
    TaskGoneError,
    TaskProtection,
    task_id_of,
)
from worker_drainer.decide.task_tags import TaskMarks

STOPPED = "STOPPED"
PENDING = "PENDING"
REPLACEMENT_PREFIX = "sim-replacement-"


@dataclass
class _Task:
    task_id: str
    arn: str
    started_at: datetime
    stream: str | None
    tags: dict[str, str] = field(default_factory=dict)
    protected: bool = False
    protected_until: datetime | None = None
    stopped_at: datetime | None = None
    stop_reason: str | None = None


class SimulatedEcsService:
    """``EcsTaskService`` for one simulated ECS service built from the log streams (see the module
    docstring). ``stopped`` lists (when, task id, reason) of every StopTask."""

    def __init__(
        self,
        events: Sequence[LogEvent],
        clock: Callable[[], datetime],
        *,
        cluster: str,
        service: str,
        region: str,
        account: str,
        deployments: Deployments | None = None,
        start_delay: Callable[[], timedelta] = timedelta,
    ) -> None:
        self.clock = clock
        # Rolling deployments the log shows (``replay_timing.rolling_deployments``): in progress, and
        # the logged tasks they replace, stopped at their last line; how long a task the scheduler
        # starts takes to be RUNNING.
        self.deployments = deployments or Deployments([], {})
        self.start_delay = start_delay
        self.cluster, self.service = cluster, service
        self._arn_prefix = f"arn:aws:ecs:{region}:{account}:task/{cluster}/"
        self.calls = 0
        first_lines: dict[str, datetime] = {}
        for event in events:
            first_lines.setdefault(event.stream, event.at)
        self._appearing = sorted(first_lines.items(), key=lambda item: item[1])
        self._tasks: dict[str, _Task] = {}
        self._desired = 0
        self._replacements = itertools.count(1)
        self.stopped: list[tuple[datetime, str, str]] = []

    # --- the service as time passes ------------------------------------------------------------------
    def _advance(self) -> None:
        """Tasks whose stream has started logging by now are RUNNING (and counted in the service)."""
        now = self.clock()
        while self._appearing and self._appearing[0][1] <= now:
            stream, first = self._appearing.pop(0)
            task_id = task_id_from_log_stream(stream)
            if task_id not in self._tasks:
                self._tasks[task_id] = _Task(task_id, self._arn_prefix + task_id, first, stream)
                self._desired += 1
        for task in self._tasks.values():
            retired = self.deployments.retired.get(task.stream or "")
            if retired is not None and retired <= now and task.stopped_at is None:
                self._stop(task, "simulated ECS: replaced by a rolling deployment")
                self._desired -= 1

    def _scheduler(self) -> None:
        """What the ECS service scheduler does with the desired count: start replacements up to it;
        stop the newest replacements above it."""
        now = self.clock()
        running = [task for task in self._tasks.values() if task.stopped_at is None]
        while len(running) < self._desired:
            task_id = f"{REPLACEMENT_PREFIX}{next(self._replacements)}"
            task = _Task(task_id, self._arn_prefix + task_id, now + self.start_delay(), None)
            self._tasks[task_id] = task
            running.append(task)
        replacements = sorted(
            (t for t in running if t.stream is None), key=lambda t: t.started_at, reverse=True
        )
        for task in replacements[: max(0, len(running) - self._desired)]:
            self._stop(task, "simulated ECS scheduler: scale-in")

    def _stop(self, task: _Task, reason: str) -> None:
        task.stopped_at, task.stop_reason = self.clock(), reason
        self.stopped.append((task.stopped_at, task.task_id, reason))

    def _running(self, task: _Task) -> bool:
        return task.stopped_at is None and task.started_at <= self.clock()

    def _view(self, task: _Task) -> EcsTask:
        status = STOPPED if task.stopped_at is not None else RUNNING if self._running(task) else PENDING
        return EcsTask(
            arn=task.arn,
            last_status=status,
            desired_status=status,
            group=f"service:{self.service}",
            tags=dict(task.tags),
            started_at=task.started_at,
            # As DescribeTasks: the reason a stopped task was given (the drainer reads its own).
            stopped_reason=task.stop_reason or "",
        )

    def _task(self, task: str) -> _Task:
        found = self._tasks.get(task_id_of(task))
        if found is None:
            raise TaskGoneError(f"simulated ECS: no task {task}", aws_code="MISSING", resource=task)
        return found

    def stream_of(self, task_id: str) -> str | None:
        task = self._tasks.get(task_id)
        return task.stream if task else None

    # --- EcsTaskService -----------------------------------------------------------------------------
    def running_tasks(self) -> list[EcsTask]:
        self.calls += 1
        self._advance()
        return [self._view(task) for task in self._tasks.values() if self._running(task)]

    def describe_task(self, task: str) -> EcsTask | None:
        self.calls += 1
        self._advance()
        found = self._tasks.get(task_id_of(task))
        return self._view(found) if found else None

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None:
        self.calls += 1
        self._task(task_arn).tags.update(tags)

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        self.calls += 1
        task = self._task(task_arn)
        for key in keys:
            task.tags.pop(key, None)

    def protection(self, task_arn: str) -> TaskProtection:
        self.calls += 1
        task = self._task(task_arn)
        expired = task.protected_until is not None and task.protected_until <= self.clock()
        if not task.protected or expired:
            return TaskProtection(False)
        return TaskProtection(True, task.protected_until)

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        self.calls += 1
        task = self._task(task_arn)
        if task.stopped_at is not None:
            raise TaskGoneError(
                f"simulated ECS: task {task.task_id} stopped", aws_code="MISSING", resource=task_arn
            )
        task.protected = enabled
        # ECS's default protection lasts 120 minutes.
        minutes = expires_in_minutes or 120
        task.protected_until = self.clock() + timedelta(minutes=minutes) if enabled else None

    def stop_task(self, task_arn: str, reason: str) -> None:
        self.calls += 1
        task = self._task(task_arn)
        if task.stopped_at is None:
            self._stop(task, reason)

    def capacity(self) -> ServiceCapacity:
        self.calls += 1
        self._advance()
        running = sum(self._running(task) for task in self._tasks.values())
        return ServiceCapacity(self._desired, running)

    def deployment_in_progress(self) -> str | None:
        self.calls += 1
        now = self.clock()
        for began, ended in self.deployments.spans:
            if began <= now < ended:
                return f"simulated ECS: rolling deployment {began:%H:%M}-{ended:%H:%M}"
        return None

    def ecs_managed_tags(self) -> bool:
        # Set up as docs/concepts/safety.md asks: the simulated tasks carry aws:ecs:serviceName.
        self.calls += 1
        return True

    def set_desired_count(self, count: int) -> None:
        self.calls += 1
        self._desired = count
        self._scheduler()


class SimulatedWorkerProbe:
    """``WorkerProbe`` answering a task's ``active_jobs`` from the log (see the module docstring)."""

    def __init__(
        self, jobs: Sequence[LoggedJob], ecs: SimulatedEcsService, livekit: SimulatedLiveKit
    ) -> None:
        self.ecs, self.livekit = ecs, livekit
        self.calls = 0
        self._by_stream: dict[str, list[LoggedJob]] = {}
        for job in jobs:
            self._by_stream.setdefault(job.stream, []).append(job)

    def active_jobs(self, task: EcsTask) -> int | None:
        self.calls += 1
        now = self.ecs.clock()
        cordoned = TaskMarks.read(task.tags).since
        stream = self.ecs.stream_of(task.task_id)
        count = 0
        for job in self._by_stream.get(stream or "", []):
            if job.requested_at > now or (cordoned is not None and job.requested_at >= cordoned):
                continue
            deleted = self.livekit.deleted_at(job.room, job.room_id)
            ends = [moment for moment in (job.exited_at, deleted) if moment is not None]
            if not ends or now < min(ends):
                count += 1
        return count
