"""The world the replay (``lkfr replay``) runs the functions against: everything outside the
functions is simulated from exported agent log events, and every class here says so in its name.
Never deployed.

* ``SimulatedClock``: the time the functions read (``deps.clock``), moved minute by minute.
* ``SimulatedLiveKit`` / ``SimulatedRoomService``: LiveKit's rooms rebuilt from the log. A room
  exists from its first ``received job request`` (name ``room``, sid ``room_id``) until the last of its
  jobs logs ``process exiting`` (livekit-agents writes the job's ``job_id`` there; an idle process's
  exit carries none and ends nothing), or until a function deletes it. A room with a job that never
  exits in the log lives to the end of the log. Creation time is the first job request (LiveKit
  creates the room a moment earlier); one participant (the agent).
``replay_ecs`` holds the ECS parts and ``replay_stores`` the in-memory AWS stores:

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from fleet_remediation.adapters.livekit_rooms import NOT_FOUND, LiveRoom, RoomService
from fleet_remediation.core.errors import LiveKitApiError
from livekit_fleet_remediation.offline.log_export import LogEvent
from worker_drainer.adapters.worker_logs import JOB_REQUEST_MESSAGE

PROCESS_EXITING_MESSAGE = "process exiting"


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
