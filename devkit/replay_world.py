"""The world the replay (``tools.replay``) runs the functions against: everything outside the
functions is simulated from exported agent log events, and every class here says so in its name.
Never deployed.

* ``SimulatedClock``: the time the functions read (``deps.clock``), moved minute by minute.
* ``SimulatedLiveKit`` / ``SimulatedRoomService``: LiveKit's rooms rebuilt from the log. A room
  exists from its first ``received job request`` (name ``room``, sid ``room_id``) until the last of its
  jobs logs ``process exiting`` (livekit-agents writes the job's ``job_id`` there; an idle process's
  exit carries none and ends nothing), or until a function deletes it. A room with a job that never
  exits in the log lives to the end of the log. Creation time is the first job request (LiveKit
  creates the room a moment earlier); one participant (the agent).
* ``SimulatedEcsService``: one ECS service, one task per log stream (task id = the stream name's last
  segment, as awslogs names it), RUNNING from the stream's first line; the desired count follows the
  tasks seen. Tags, scale-in protection (off until a function turns it on) and StopTask behave as the
  ``EcsTaskService`` protocol says; when the desired count exceeds the running tasks the service starts
  a replacement task (no log stream: it is quiet), and it stops the newest replacement when the count
  drops below them. It never stops a logged task on its own.
* ``SimulatedWorkerProbe``: a draining task's active jobs (the agents worker's ``/worker``): its jobs
  alive now that it received before it was cordoned (jobs the log shows arriving later would, in the
  replayed world, have gone to another worker); a job ends with its room.
* ``SimulatedLedger``, ``SimulatedOnceGuard``, ``SimulatedEventBus``, ``SimulatedNotifier``: the DynamoDB
  ledger and idempotency table, EventBridge and SNS, in memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from devkit.log_export import LogEvent
from fleet_remediation.adapters.alarm_state import AlarmReading
from fleet_remediation.adapters.livekit_rooms import NOT_FOUND, LiveRoom, RoomService
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import (
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    task_id_from_log_stream,
)
from fleet_remediation.core.errors import ConcurrentActionError, LiveKitApiError
from worker_drainer.adapters.ecs_tasks import (
    RUNNING,
    EcsTask,
    ServiceCapacity,
    TaskGoneError,
    TaskProtection,
    task_id_of,
)
from worker_drainer.adapters.ledger import AuditKey, CapacityDebt, Lease, Phase
from worker_drainer.adapters.worker_logs import JOB_REQUEST_MESSAGE
from worker_drainer.tags import TaskMarks

PROCESS_EXITING_MESSAGE = "process exiting"
STOPPED = "STOPPED"
REPLACEMENT_PREFIX = "sim-replacement-"


class SimulatedClock:
    """The replay's clock: the functions read it through their injected ``clock``."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class LoggedJob:
    """One job as the log tells it: received on ``stream`` at ``requested_at`` for ``room``."""

    job_id: str
    stream: str
    room: str
    room_id: str
    requested_at: datetime
    exited_at: datetime | None


def jobs_from_events(events: Sequence[LogEvent]) -> list[LoggedJob]:
    """Every job with a ``received job request`` line, with the time its process exited (if logged)."""
    requests: dict[str, LogEvent] = {}
    exits: dict[str, datetime] = {}
    for event in events:
        job_id = event.record.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            continue
        message = event.record.get("message")
        if message == JOB_REQUEST_MESSAGE and event.record.get("room"):
            requests.setdefault(job_id, event)
        elif message == PROCESS_EXITING_MESSAGE:
            exits[job_id] = event.at
    return [
        LoggedJob(
            job_id=job_id,
            stream=event.stream,
            room=str(event.record["room"]),
            room_id=str(event.record.get("room_id", "")),
            requested_at=event.at,
            exited_at=exits.get(job_id),
        )
        for job_id, event in requests.items()
    ]


@dataclass
class _Room:
    name: str
    sid: str
    created_at: datetime
    ends_at: datetime | None
    deleted_at: datetime | None = None

    def alive(self, now: datetime) -> bool:
        if now < self.created_at:
            return False
        if self.deleted_at is not None and now >= self.deleted_at:
            return False
        return self.ends_at is None or now < self.ends_at


class SimulatedLiveKit:
    """The simulated LiveKit server's rooms (shared by every ``SimulatedRoomService`` client)."""

    def __init__(self, jobs: Sequence[LoggedJob], clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.deletions: list[tuple[datetime, str, str]] = []  # (when, room, sid)
        # The reaper's warnings to live rooms: their metadata, and (when, room, topic) of each message.
        self.metadata: dict[str, str] = {}
        self.messages: list[tuple[datetime, str, str]] = []
        grouped: dict[tuple[str, str], list[LoggedJob]] = {}
        for job in jobs:
            grouped.setdefault((job.room, job.room_id), []).append(job)
        self._rooms: list[_Room] = []
        for (name, sid), members in grouped.items():
            exits = [job.exited_at for job in members]
            ends = None if any(e is None for e in exits) else max(e for e in exits if e is not None)
            self._rooms.append(_Room(name, sid, min(job.requested_at for job in members), ends))

    def live_rooms(self) -> list[LiveRoom]:
        now = self.clock()
        return [
            LiveRoom(
                name=room.name,
                sid=room.sid,
                created_at=room.created_at,
                num_participants=1,
                metadata=self.metadata.get(room.name, ""),
            )
            for room in self._rooms
            if room.alive(now)
        ]

    def delete(self, name: str) -> None:
        now = self.clock()
        live = [room for room in self._rooms if room.name == name and room.alive(now)]
        if not live:
            raise LiveKitApiError(
                f"simulated LiveKit: room {name} not found", twirp_code=NOT_FOUND, resource=name
            )
        for room in live:
            room.deleted_at = now
            self.deletions.append((now, room.name, room.sid))

    def deleted_at(self, name: str, sid: str) -> datetime | None:
        return next((room.deleted_at for room in self._rooms if (room.name, room.sid) == (name, sid)), None)


class SimulatedRoomService:
    """``RoomService`` over ``SimulatedLiveKit``: ListRooms filters by name, DeleteRoom of a missing
    room answers ``not_found``, as the real server does."""

    def __init__(self, server: SimulatedLiveKit) -> None:
        self.server = server
        self.calls = 0

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        self.calls += 1
        rooms = self.server.live_rooms()
        return [room for room in rooms if room.name in set(names)] if names else rooms

    async def delete_room(self, name: str) -> None:
        self.calls += 1
        self.server.delete(name)

    async def update_room_metadata(self, name: str, metadata: str) -> None:
        self.calls += 1
        self.server.metadata[name] = metadata

    async def send_data(self, name: str, data: bytes, topic: str) -> None:
        self.calls += 1
        self.server.messages.append((self.server.clock(), name, topic))

    async def aclose(self) -> None:
        return None


def room_service_factory(server: SimulatedLiveKit) -> Callable[[], RoomService]:
    return lambda: SimulatedRoomService(server)


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
    ) -> None:
        self.clock = clock
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

    def _scheduler(self) -> None:
        """What the ECS service scheduler does with the desired count: start replacements up to it;
        stop the newest replacements above it."""
        now = self.clock()
        running = [task for task in self._tasks.values() if task.stopped_at is None]
        while len(running) < self._desired:
            task_id = f"{REPLACEMENT_PREFIX}{next(self._replacements)}"
            task = _Task(task_id, self._arn_prefix + task_id, now, None)
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

    def _view(self, task: _Task) -> EcsTask:
        status = RUNNING if task.stopped_at is None else STOPPED
        return EcsTask(
            arn=task.arn,
            last_status=status,
            desired_status=status,
            group=f"service:{self.service}",
            tags=dict(task.tags),
            started_at=task.started_at,
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
        return [self._view(task) for task in self._tasks.values() if task.stopped_at is None]

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
        running = sum(task.stopped_at is None for task in self._tasks.values())
        return ServiceCapacity(self._desired, running)

    def deployment_in_progress(self) -> str | None:
        # The replayed incident has no deployment.
        self.calls += 1
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


class SimulatedLedger:
    """The drainer's ledger (``Ledger``) in memory: leases with expiry, capacity debts (with the same
    phase conditions as the DynamoDB one), the journal (one entry per step: intent, then outcome),
    notices."""

    def __init__(self) -> None:
        self.calls = 0
        self._leases: dict[str, Lease] = {}
        self._debts: dict[str, CapacityDebt] = {}
        self._journal: dict[tuple[str, str], tuple[datetime, str, dict[str, str]]] = {}
        self._notices: dict[str, int] = {}

    def acquire(self, key: str, holder: str, now: datetime, ttl_seconds: int) -> Lease:
        self.calls += 1
        held = self._leases.get(key)
        if held is not None and held.holder != holder and held.expires_at >= int(now.timestamp()):
            raise ConcurrentActionError(f"{key} is being handled by another invocation", resource=key)
        self._leases[key] = Lease(key, holder, int(now.timestamp()) + ttl_seconds)
        return self._leases[key]

    def release(self, lease: Lease) -> None:
        self.calls += 1
        if self._leases.get(lease.key) == lease:
            del self._leases[lease.key]

    def capacity_debts(self) -> list[CapacityDebt]:
        self.calls += 1
        return list(self._debts.values())

    def capacity_debt(self, task_id: str) -> CapacityDebt | None:
        self.calls += 1
        return self._debts.get(task_id)

    def _expect(self, task_id: str, expected: Phase | None) -> None:
        held = self._debts.get(task_id)
        if (held.phase if held else None) is not expected:
            raise ConcurrentActionError(f"capacity debt of {task_id} is not {expected}", resource=task_id)

    def put_capacity_debt(self, debt: CapacityDebt, expected: Phase | None) -> None:
        self.calls += 1
        self._expect(debt.task_id, expected)
        self._debts[debt.task_id] = debt

    def forget_capacity_debt(self, task_id: str, expected: Phase) -> None:
        self.calls += 1
        self._expect(task_id, expected)
        del self._debts[task_id]

    def audit(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        self.calls += 1
        self._journal[(task_id, key.sort_key)] = (key.at, task_id, dict(entry))

    def first_notice(self, key: str, now: datetime, ttl_seconds: int) -> bool:
        self.calls += 1
        epoch = int(now.timestamp())
        if self._notices.get(key, 0) > epoch:
            return False
        self._notices[key] = epoch + ttl_seconds
        return True


class SimulatedAlarmStates:
    """CloudWatch DescribeAlarms (``AlarmStates``): each alarm's state as the replay evaluated it."""

    def __init__(self) -> None:
        self.readings: dict[str, AlarmReading] = {}

    def current(self, alarm_name: str) -> AlarmReading | None:
        return self.readings.get(alarm_name)


class SimulatedOnceGuard:
    """The responder's idempotency table (``OnceGuard``) in memory."""

    def __init__(self) -> None:
        self._results: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}

    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        index = tuple(sorted(key.items()))
        if index in self._results:
            return self._results[index], True
        self._results[index] = action()
        return self._results[index], False


@dataclass(frozen=True)
class SentNotification:
    at: datetime
    function: str
    subject: str
    message: str


class SimulatedNotifier:
    """SNS (``Notifier``): every message a function publishes, with the simulated time."""

    def __init__(self, function: str, clock: Callable[[], datetime], sent: list[SentNotification]) -> None:
        self.function, self.clock, self.sent = function, clock, sent

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.sent.append(SentNotification(self.clock(), self.function, subject, message))
        return f"simulated-sns-{len(self.sent)}"


class SimulatedEventBus:
    """EventBridge (``EventPublisher``): the suspect-worker events the responder puts, as the
    envelopes EventBridge would deliver to the rules that match them."""

    def __init__(self, clock: Callable[[], datetime], *, region: str, account: str) -> None:
        self.clock, self.region, self.account = clock, region, account
        self.pending: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str:
        event_id = f"simulated-event-{next(self._ids)}"
        self.pending.append(
            {
                "version": "0",
                "id": event_id,
                "detail-type": SUSPECT_WORKER_DETAIL_TYPE,
                "source": EVENT_SOURCE,
                "account": self.account,
                "time": self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": self.region,
                "resources": [],
                "detail": detail.model_dump(mode="json"),
            }
        )
        return event_id

    def take(self) -> list[dict[str, Any]]:
        events, self.pending = self.pending, []
        return events
