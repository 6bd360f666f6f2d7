"""The AWS stores around the replayed functions, in memory: the drainer's ledger, the alarms' states,
the responder's idempotency table, SNS and EventBridge."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleet_remediation.adapters.alarm_state import AlarmReading
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from fleet_remediation.core.errors import ConcurrentActionError
from worker_drainer.adapters.group_event_records import TickMemory
from worker_drainer.adapters.journal_model import INTENDED, OpenIntent, TagWrite
from worker_drainer.adapters.ledger import AuditKey, CapacityDebt, Lease, Phase


class SimulatedTickMemory:
    """The previous tick's failing tasks (``TickMemory``), in memory."""

    def __init__(self) -> None:
        self._streams: tuple[list[str], int] = ([], 0)

    def remember(self, streams: Sequence[str], now: datetime, ttl_seconds: int) -> None:
        self._streams = (sorted(streams), int(now.timestamp()) + ttl_seconds)

    def earlier(self, now: datetime) -> list[str]:
        streams, expires_at = self._streams
        return list(streams) if expires_at > int(now.timestamp()) else []


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
        self._open: dict[tuple[str, str], OpenIntent] = {}
        self._group_event: tuple[str, int] | None = None
        self.tick_memory: TickMemory = SimulatedTickMemory()
        self._tag_writes: list[TagWrite] = []

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

    def open_intent(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        self.calls += 1
        self._open[(task_id, key.sort_key)] = OpenIntent(task_id, key, dict(entry))

    def open_intents(self) -> list[OpenIntent]:
        self.calls += 1
        return list(self._open.values())

    def recorded_outcome(self, intent: OpenIntent) -> str | None:
        self.calls += 1
        found = self._journal.get((intent.task_id, intent.key.sort_key))
        return None if found is None else found[2].get("outcome", INTENDED)

    def close_intent(self, task_id: str, key: AuditKey) -> bool:
        self.calls += 1
        return self._open.pop((task_id, key.sort_key), None) is not None

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None:
        self.calls += 1
        self._group_event = (description, int(now.timestamp()) + ttl_seconds)

    def group_event(self, now: datetime) -> str | None:
        self.calls += 1
        held = self._group_event
        return held[0] if held is not None and held[1] > int(now.timestamp()) else None

    def record_tag_write(self, key: AuditKey, write: TagWrite) -> None:
        self.calls += 1
        self._tag_writes.append(write)

    def tag_writes_since(self, moment: datetime) -> list[TagWrite]:
        self.calls += 1
        return [write for write in self._tag_writes if write.at >= moment]


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
