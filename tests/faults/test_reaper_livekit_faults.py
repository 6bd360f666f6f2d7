"""The zombie reaper against the real livekit-server behind devkit.fault_proxy: hangs before and after
the server acts, slow replies, resets, corrupt 200s, 5xx after success, on each of its requests
(the listing, the re-check, the delete, the re-read, the warning), kills between its steps, and
concurrent and duplicate deliveries.

Every fault asserts: the run ends within its time bound; it writes exactly one report; every room it
deleted (read back from the server, not through the proxy) has a journal intent and is reported
done; every room it reported done is gone and every room it reported failed is still there; and a
next run without the fault leaves nothing half done (every over-age room gone, status ok).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.aws_endpoints import AwsEndpoint, Behaviour
from devkit.fault_proxy import Fault, FaultProxy
from devkit.livekit_clients import BackgroundLoop, Participant, create_rooms, wait_for_participants
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.livekit_rooms import (
    LiveKitCredentials,
    LiveKitRoomService,
    LiveRoom,
    RoomService,
)
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.budgets import PUBLISH_BUDGET_SECONDS
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.report_model import Mode
from fleet_remediation.domain.room_warnings import read_warning
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tests.faults.table import FaultRecorder
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

pytestmark = [
    pytest.mark.livekit,
    pytest.mark.timeout(60),
    # A killed invocation flushes no metrics; Powertools warns about that.
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
]

REQUEST_TIMEOUT = 1.0
# Every room is this much past its creation when the reaper looks (max age 60 min).
AGED = timedelta(hours=2)
SLACK_SECONDS = 2.0
SCHEDULE_EVENT = {
    "version": "0",
    "id": "fault-schedule",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-09-15T18:00:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:123456789012:rule/lkfr-faults-reaper"],
    "detail": {},
}


def schedule_tick(deps: ReaperDependencies | None = None) -> dict[str, Any]:
    """The schedule's event at the run's clock (the world's unless ``deps`` has its own): the door
    refuses a stale one."""
    at = deps.clock() if deps else datetime.now(UTC) + AGED
    return {**SCHEDULE_EVENT, "time": f"{at:%Y-%m-%dT%H:%M:%SZ}"}


def bound(requests: int) -> float:
    """The longest a run of ``requests`` sequential LiveKit requests may take."""
    return requests * REQUEST_TIMEOUT + SLACK_SECONDS


class RecordingNotifier:
    def __init__(self) -> None:
        self.subjects: list[str] = []
        self.messages: list[str] = []

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.subjects.append(subject)
        self.messages.append(message)
        return f"msg-{len(self.subjects)}"


@dataclass
class Run:
    report: dict[str, Any]
    journal: list[dict[str, Any]]
    seconds: float

    def outcomes(self, action: str = "delete-room") -> dict[str, str]:
        return {a["resource"]: a["outcome"] for a in self.report["actions"] if a["action"] == action}

    def intended(self, action: str = "delete-room") -> set[str]:
        return {j["resource"] for j in self.journal if "outcome" not in j and j["action"] == action}


@dataclass
class ReaperWorld:
    """Rooms named ``<prefix>-<n>`` on the real server; the reaper reaches it through ``proxy``."""

    server: LocalLiveKit
    proxy: FaultProxy
    caplog: pytest.LogCaptureFixture
    prefix: str = field(default_factory=lambda: f"fault-{uuid.uuid4().hex[:8]}")
    notifier: RecordingNotifier = field(default_factory=RecordingNotifier)

    def create(self, count: int) -> list[str]:
        names = [f"{self.prefix}-{i}" for i in range(count)]
        asyncio.run(create_rooms(self.server, names))
        return names

    def live(self) -> dict[str, LiveRoom]:
        """Our rooms as the server has them (read directly, never through the proxy)."""
        credentials = self.credentials()

        async def read() -> list[LiveRoom]:
            service = LiveKitRoomService(self.server.http_url, credentials, 5.0)
            try:
                return await service.list_rooms()
            finally:
                await service.aclose()

        return {room.name: room for room in asyncio.run(read()) if room.name.startswith(self.prefix)}

    def credentials(self) -> LiveKitCredentials:
        return LiveKitCredentials.model_validate(
            {"api_key": self.server.api_key, "api_secret": self.server.api_secret}
        )

    def dependencies(
        self, wrap: Callable[[RoomService], RoomService] = lambda rooms: rooms, **policy: Any
    ) -> ReaperDependencies:
        settings = ReaperSettings.model_validate(
            {
                "environment_name": "faults",
                "mode_parameter_name": "/livekit-fleet-remediation/faults/mode",
                "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:faults",
                "runbook_base_url": "https://runbooks.example.com/repo",
                "livekit_url": self.proxy.url,
                "livekit_secret_id": "injected",
                "reaper": {
                    "livekit_request_timeout_seconds": REQUEST_TIMEOUT,
                    "policy": {
                        "managed_room_pattern": f"^{self.prefix}-.+$",
                        "max_age_minutes": 60,
                        **policy,
                    },
                },
            }
        )
        credentials = self.credentials()
        return ReaperDependencies(
            settings=settings,
            mode_switch=FixedModeSwitch(Mode.ENFORCE),
            notifier=self.notifier,
            room_service_factory=lambda: wrap(
                LiveKitRoomService(self.proxy.url, credentials, REQUEST_TIMEOUT)
            ),
            clock=lambda: datetime.now(UTC) + AGED,
        )

    def run(self, deps: ReaperDependencies | None = None, later: timedelta = timedelta(0)) -> Run:
        deps = deps or self.dependencies()
        if later:
            deps.clock = lambda: datetime.now(UTC) + AGED + later
        self.caplog.clear()
        started = time.monotonic()
        report = dict(handler.lambda_handler(schedule_tick(deps), LocalLambdaContext(), dependencies=deps))
        seconds = time.monotonic() - started
        assert len(_logged(self.caplog, "remediation report")) == 1, "exactly one report"
        return Run(report, _journal(self.caplog), seconds)


def _logged(caplog: pytest.LogCaptureFixture, message: str) -> list[Any]:
    return [r for r in caplog.records if r.getMessage() == message]


def _journal(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.journal for r in caplog.records if hasattr(r, "journal")]


@pytest.fixture
def world(livekit_server: LocalLiveKit, caplog: pytest.LogCaptureFixture) -> Iterator[ReaperWorld]:
    with FaultProxy("127.0.0.1", livekit_server.port) as proxy:
        yield ReaperWorld(livekit_server, proxy, caplog)


def assert_sound(run: Run, before: set[str], after: set[str]) -> None:
    """Nothing done without a record, nothing recorded that did not happen."""
    deleted = before - after
    assert deleted <= run.intended(), f"deleted without a journal intent: {deleted - run.intended()}"
    outcomes = run.outcomes()
    for name in deleted:
        assert outcomes.get(name) in ("done", "unknown"), (
            f"{name} was deleted but reported {outcomes.get(name)}"
        )
    for name, outcome in outcomes.items():
        if outcome == "done":
            assert name not in after, f"{name} reported done but still there"
        if outcome == "failed":
            assert name in after, f"{name} reported failed but gone"
    # Every journaled step is resolved in the report (a lost reply is re-read, never left open).
    assert run.intended() <= set(outcomes)


def assert_next_run_finishes(world: ReaperWorld) -> Run:
    world.proxy.clear()
    before = set(world.live())
    run = world.run()
    after = set(world.live())
    assert_sound(run, before, after)
    assert after == set(), f"left half done: {after}"
    assert run.report["status"] == "ok", run.report["errors"]
    return run


# --- faults on DeleteRoom ----------------------------------------------------------------------------

DELETE_FAULTS = [
    # (fault, status, expected outcome of each delete, what the report shows)
    (Fault.HANG_BEFORE_FORWARD, 502, "failed", "LiveKitTimeout; re-read: still there"),
    (Fault.HANG_AFTER_ANSWER, 502, "done", "LiveKitTimeout; re-read: gone"),
    (Fault.CUT_BEFORE_FORWARD, 502, "failed", "LiveKitUnavailable; re-read: still there"),
    (Fault.CUT_AFTER_ANSWER, 502, "done", "LiveKitUnavailable; re-read: gone"),
    (Fault.CORRUPT_BODY, 502, "done", "LiveKitBadReply; re-read: gone"),
    (Fault.SERVER_ERROR_AFTER_FORWARD, 502, "done", "502 after the delete; re-read: gone"),
    (Fault.SERVER_ERROR_AFTER_FORWARD, 503, "done", "503 after the delete; re-read: gone"),
]


@pytest.mark.parametrize(
    ("fault_kind", "status", "expected", "shown"),
    DELETE_FAULTS,
    ids=[
        f"{f.value}-{s}" if f is Fault.SERVER_ERROR_AFTER_FORWARD else f.value for f, s, _, _ in DELETE_FAULTS
    ],
)
def test_a_fault_on_delete_room(
    world: ReaperWorld, fault: FaultRecorder, fault_kind: Fault, status: int, expected: str, shown: str
) -> None:
    label = (
        f"{fault_kind.value} {status}" if fault_kind is Fault.SERVER_ERROR_AFTER_FORWARD else fault_kind.value
    )
    fault.describe(f"livekit DeleteRoom: {label}", "zombie_reaper")
    names = set(world.create(3))
    world.proxy.inject(fault_kind, methods={"DeleteRoom"}, status=status)
    run = world.run()
    fault.took(run.seconds)
    after = set(world.live())
    # The listing, the re-check, the deletes (concurrent), one re-read.
    assert run.seconds <= bound(4)
    assert_sound(run, names, after)
    assert run.outcomes() == dict.fromkeys(names, expected)
    assert after == (names if expected == "failed" else set())
    (subject,) = world.notifier.subjects
    deleted = 0 if expected == "failed" else 3
    assert f"zombie reaper deleted {deleted} of 3 over-age room(s)" in subject, "told, with honest counts"
    assert subject.startswith("[faults] PARTIAL: ") is (expected == "failed")
    assert_next_run_finishes(world)
    fault.outcome(f"{expected} x3 ({shown}); next run: nothing left")


def test_slow_replies_within_the_deadline(world: ReaperWorld, fault: FaultRecorder) -> None:
    fault.describe("livekit slow (150 ms each way, every request)", "zombie_reaper")
    names = set(world.create(3))
    world.proxy.inject(Fault.DELAY, delay_ms=150)
    run = world.run()
    fault.took(run.seconds)
    assert run.seconds <= bound(3)
    assert_sound(run, names, set(world.live()))
    assert run.outcomes() == dict.fromkeys(names, "done")
    fault.outcome("done x3, late")


# --- faults on the listing, the re-check and the re-read ---------------------------------------------

LISTING_FAULTS = [
    (Fault.HANG_BEFORE_FORWARD, "LiveKitTimeout"),
    (Fault.CUT_BEFORE_FORWARD, "LiveKitUnavailable"),
    (Fault.CORRUPT_BODY, "LiveKitBadReply"),
    (Fault.SERVER_ERROR_AFTER_FORWARD, "LiveKitApiError"),
]


@pytest.mark.parametrize(("fault_kind", "code"), LISTING_FAULTS, ids=[f.value for f, _ in LISTING_FAULTS])
def test_a_fault_on_the_listing_is_a_typed_error_and_nothing_else(
    world: ReaperWorld, fault: FaultRecorder, fault_kind: Fault, code: str
) -> None:
    fault.describe(f"livekit ListRooms (listing): {fault_kind.value}", "zombie_reaper")
    names = set(world.create(2))
    world.proxy.inject(fault_kind, methods={"ListRooms"})
    run = world.run()
    fault.took(run.seconds)
    assert run.seconds <= bound(1)
    assert [e["code"] for e in run.report["errors"]] == [code]
    assert run.report["status"] == "failed"
    assert run.report["actions"] == []
    assert set(world.live()) == names
    # Told once, as a failed run (nothing deleted).
    assert world.notifier.subjects == [
        f"[faults] FAILED: zombie reaper checked for over-age rooms, but the run failed: {code}"
    ]
    assert_next_run_finishes(world)
    fault.outcome(f"{code}, nothing touched, told as a failed run; next run: done")


@pytest.mark.parametrize("fault_kind", [Fault.HANG_BEFORE_FORWARD, Fault.CORRUPT_BODY], ids=lambda f: f.value)
def test_a_fault_on_the_re_check_deletes_nothing(
    world: ReaperWorld, fault: FaultRecorder, fault_kind: Fault
) -> None:
    fault.describe(f"livekit ListRooms (re-check): {fault_kind.value}", "zombie_reaper")
    names = set(world.create(2))
    world.proxy.inject(fault_kind, methods={"ListRooms"}, skip=1)
    run = world.run()
    fault.took(run.seconds)
    assert run.seconds <= bound(2)
    assert run.outcomes() == dict.fromkeys(names, "failed")
    assert all("re-check failed" in a["reason"] for a in run.report["actions"])
    assert run.intended() == set()
    assert set(world.live()) == names
    assert_next_run_finishes(world)
    fault.outcome("failed x2 (re-check failed), nothing deleted; next run: done")


def test_a_lost_delete_whose_re_read_also_hangs_is_unknown(world: ReaperWorld, fault: FaultRecorder) -> None:
    fault.describe("livekit DeleteRoom reply lost, re-read hangs", "zombie_reaper")
    names = set(world.create(2))
    # Listing and re-check pass; every later request is carried out and its reply withheld.
    world.proxy.inject(Fault.HANG_AFTER_ANSWER, methods={"ListRooms", "DeleteRoom"}, skip=2)
    run = world.run()
    fault.took(run.seconds)
    after = set(world.live())
    assert run.seconds <= bound(4)
    assert_sound(run, names, after)
    assert run.outcomes() == dict.fromkeys(names, "unknown")
    assert run.report["summary"]["unknown"] == 2
    (message,) = world.notifier.messages
    assert "deleted 0 of 2 over-age room(s)" in message
    assert "2 of unknown outcome (reply lost, re-read failed)" in message
    # The server did act: the next run's listing is the re-read, and finds nothing to do.
    next_run = assert_next_run_finishes(world)
    assert next_run.report["actions"] == []
    fault.outcome("unknown x2 (re-read timed out), notified; next run: already gone")


# --- the warning to live users ---------------------------------------------------------------------


@pytest.fixture
def clients() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    yield loop
    loop.close()


def _with_child(world: ReaperWorld, clients: BackgroundLoop) -> tuple[str, Participant]:
    (name,) = world.create(1)
    child = Participant(world.server, clients, name, "child").connect()
    asyncio.run(asyncio.wait_for(wait_for_participants(world.server, name, 1), 10))
    return name, child


def test_a_metadata_update_hung_before_the_server_is_unknown_and_the_next_run_warns(
    world: ReaperWorld, clients: BackgroundLoop, fault: FaultRecorder
) -> None:
    fault.describe("livekit UpdateRoomMetadata hangs (warning)", "zombie_reaper")
    name, child = _with_child(world, clients)
    world.proxy.inject(Fault.HANG_BEFORE_FORWARD, methods={"UpdateRoomMetadata"})
    run = world.run()
    fault.took(run.seconds)
    assert run.seconds <= bound(3)
    # No answer: the caller cannot tell it never arrived. The listing of the next run can.
    assert run.outcomes("warn-room") == {name: "unknown"}
    assert name in world.live()
    assert read_warning(world.live()[name].metadata).warned_at is None
    world.proxy.clear()
    again = world.run()
    assert again.outcomes("warn-room") == {name: "done"}
    assert read_warning(world.live()[name].metadata).warned_at is not None
    assert _eventually(lambda: len(child.received) == 1)
    child.close()
    fault.outcome("warning unknown, room kept, no record; next run: warned once")


# The three faults after which a warning's caller cannot know whether its request acted.
AMBIGUOUS = [Fault.SERVER_ERROR_AFTER_FORWARD, Fault.CUT_AFTER_ANSWER, Fault.HANG_AFTER_ANSWER]


@pytest.mark.parametrize("fault_kind", AMBIGUOUS, ids=[f.value for f in AMBIGUOUS])
@pytest.mark.parametrize("method", ["UpdateRoomMetadata", "SendData"])
def test_a_warning_call_that_took_effect_is_unknown_and_never_sent_twice(
    world: ReaperWorld, clients: BackgroundLoop, fault: FaultRecorder, method: str, fault_kind: Fault
) -> None:
    fault.describe(f"livekit {method} {fault_kind.value} (warning); two more runs", "zombie_reaper")
    name, child = _with_child(world, clients)
    world.proxy.inject(fault_kind, methods={method})
    run = world.run()
    fault.took(run.seconds)
    assert run.seconds <= bound(3)
    assert run.outcomes("warn-room") == {name: "unknown"}, "it took effect: never reported failed"
    assert method in world.proxy.forwarded
    # The metadata record landed either way: the next runs are within the grace and send nothing.
    assert read_warning(world.live()[name].metadata).warned_at is not None
    world.proxy.clear()
    for _ in range(2):
        assert world.run().report["actions"] == []
    sent = 1 if method == "SendData" else 0
    assert _eventually(lambda: len(child.received) >= sent)
    time.sleep(0.5)
    assert len(child.received) == sent, "the warning message went out at most once"
    assert name in world.live()
    child.close()
    fault.outcome(f"unknown, record kept; {sent} message(s); next runs: in grace, nothing more")


def _eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


# --- kills between steps ------------------------------------------------------------------------------


class KilledAt:
    """A RoomService that dies (SystemExit, as a killed Lambda) before the run's ``call``-th request.
    The run's read and act each build a client: ``counter`` counts the requests of all of them."""

    def __init__(self, rooms: RoomService, call: int, counter: list[int]) -> None:
        self.rooms = rooms
        self.call = call
        self.counter = counter

    def _tick(self) -> None:
        self.counter[0] += 1
        if self.counter[0] == self.call:
            raise SystemExit(f"killed before LiveKit request {self.call}")

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        self._tick()
        return await self.rooms.list_rooms(names)

    async def delete_room(self, name: str) -> None:
        self._tick()
        await self.rooms.delete_room(name)

    async def update_room_metadata(self, name: str, metadata: str) -> None:
        self._tick()
        await self.rooms.update_room_metadata(name, metadata)

    async def send_data(self, name: str, data: bytes, topic: str) -> None:
        self._tick()
        await self.rooms.send_data(name, data, topic)

    async def aclose(self) -> None:
        await self.rooms.aclose()


# Requests of a run over three rooms, one at a time: 1 listing, 2 re-check, 3-5 deletes.
KILL_POINTS = {
    2: "after the listing",
    3: "before the first delete",
    4: "between deletes 1 and 2",
    5: "before the last delete",
}


@pytest.mark.parametrize(
    "call", sorted(KILL_POINTS), ids=[KILL_POINTS[c].replace(" ", "-") for c in sorted(KILL_POINTS)]
)
def test_a_run_killed_between_steps(world: ReaperWorld, fault: FaultRecorder, call: int) -> None:
    fault.describe(f"kill {KILL_POINTS[call]}", "zombie_reaper")
    names = set(world.create(3))
    counter = [0]
    deps = world.dependencies(wrap=lambda rooms: KilledAt(rooms, call, counter), delete_concurrency=1)
    world.caplog.clear()
    started = time.monotonic()
    with pytest.raises(SystemExit):
        handler.lambda_handler(schedule_tick(deps), LocalLambdaContext(), dependencies=deps)
    fault.took(time.monotonic() - started)
    journal = _journal(world.caplog)
    intents = {j["resource"] for j in journal if "outcome" not in j}
    finished = {j["resource"]: j["outcome"] for j in journal if "outcome" in j}
    after = set(world.live())
    deleted = names - after
    # Killed: no report, but the journal holds every delete it did, each with its outcome.
    assert deleted <= intents
    assert all(finished.get(name) == "done" for name in deleted)
    assert len(deleted) == max(0, call - 3)
    assert_next_run_finishes(world)
    fault.outcome(f"{len(deleted)} deleted, each journaled; next run: the rest")


def test_a_run_killed_after_its_deletes_before_the_notification(
    world: ReaperWorld, fault: FaultRecorder
) -> None:
    fault.describe("kill after the deletes, before the notification", "zombie_reaper")
    names = set(world.create(2))

    def killed(subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        raise SystemExit("killed before the notification")

    world.notifier.publish = killed  # type: ignore[method-assign]
    world.caplog.clear()
    with fault.timed(), pytest.raises(SystemExit):
        handler.lambda_handler(schedule_tick(), LocalLambdaContext(), dependencies=world.dependencies())
    journal = _journal(world.caplog)
    assert {j["resource"] for j in journal if j.get("outcome") == "done"} == names
    assert set(world.live()) == set()
    fault.outcome("both deletes journaled done; no notification (killed), journal is the record")


def test_a_silent_notification_endpoint_after_the_deletes(
    world: ReaperWorld, fault: FaultRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault.describe("SNS silent after the deletes", "zombie_reaper")
    names = set(world.create(2))
    with AwsEndpoint() as endpoint:
        endpoint.behave(Behaviour.SILENT)
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.url)
        deps = world.dependencies()
        deps.notifier = SnsNotifier("arn:aws:sns:eu-west-1:123456789012:faults")
        world.caplog.clear()
        started = time.monotonic()
        # Sent, never answered: it may have landed, so it is not sent again and nothing is retried.
        handler.lambda_handler(schedule_tick(deps), LocalLambdaContext(), dependencies=deps)
        seconds = time.monotonic() - started
        assert endpoint.requests == 1, "one attempt: a publish that may have landed is never repeated"
    fault.took(seconds)
    (logged,) = _logged(world.caplog, "remediation report")
    run = Run(logged.report, _journal(world.caplog), seconds)
    assert run.seconds <= bound(3) + PUBLISH_BUDGET_SECONDS
    assert_sound(run, names, set(world.live()))
    assert run.outcomes() == dict.fromkeys(names, "done"), "the deletions are in the report"
    assert [e["code"] for e in run.report["errors"]] == ["NotificationUnknown"]
    fault.outcome("deletes reported done; NotificationUnknown after one attempt, never sent again")


# --- concurrent and duplicate deliveries ---------------------------------------------------------------


def test_concurrent_deliveries_delete_each_room_once(world: ReaperWorld, fault: FaultRecorder) -> None:
    fault.describe("two concurrent deliveries", "zombie_reaper")
    names = set(world.create(5))
    runs: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def deliver() -> None:
        try:
            runs.append(
                dict(
                    handler.lambda_handler(
                        schedule_tick(), LocalLambdaContext(), dependencies=world.dependencies()
                    )
                )
            )
        except BaseException as exc:
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    seconds = time.monotonic() - started
    fault.took(seconds)
    assert errors == []
    assert len(runs) == 2
    assert seconds <= bound(8)
    assert set(world.live()) == set()
    outcomes = [(a["resource"], a["outcome"]) for run in runs for a in run["actions"]]
    assert {outcome for _, outcome in outcomes} <= {"done", "already-done"}
    assert {name for name, outcome in outcomes if outcome == "done"} == names
    fault.outcome("every room gone, no failure; the other delivery saw them gone")


def test_a_duplicate_delivery_finds_nothing_to_do(world: ReaperWorld, fault: FaultRecorder) -> None:
    fault.describe("duplicate delivery (same event twice)", "zombie_reaper")
    names = set(world.create(2))
    first = world.run()
    second = world.run()
    fault.took(first.seconds + second.seconds)
    assert first.outcomes() == dict.fromkeys(names, "done")
    assert second.report["actions"] == []
    assert second.report["status"] == "ok"
    assert len(world.notifier.subjects) == 1, "one notification for one set of deletions"
    fault.outcome("second delivery: no action, no second notification")
