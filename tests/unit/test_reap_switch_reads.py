"""The kill switch's re-read before each reap step: answered on the event loop only when the switch
can answer without I/O, otherwise read in a thread, one read shared by the steps that asked in the
same turn of the loop (never a read that started before a step asked)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.core.kill_switch import SsmModeSwitch
from fleet_remediation.core.report_model import Mode, Outcome
from fleet_remediation.domain.reap_executor import ReapExecutor, SwitchReads
from fleet_remediation.domain.reaping import plan_reap

NOW = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)


class ThreadedSwitch:
    """A switch with only ``read`` (it may block): records the thread of every read."""

    def __init__(self, modes: list[Mode]) -> None:
        self.modes = modes
        self.threads: list[int] = []

    def read(self) -> Mode:
        self.threads.append(threading.get_ident())
        return self.modes.pop(0) if len(self.modes) > 1 else self.modes[0]


class CachedSwitch(ThreadedSwitch):
    """A switch that can answer without I/O while ``fresh``."""

    def __init__(self, modes: list[Mode], fresh: bool) -> None:
        super().__init__(modes)
        self.fresh = fresh

    def cached(self) -> Mode | None:
        return self.modes[0] if self.fresh else None


class StubSsm:
    def __init__(self, value: str) -> None:
        self.value = value
        self.calls = 0

    def get_parameters(self, Names: list[str]) -> dict[str, Any]:
        self.calls += 1
        return {"Parameters": [{"Name": name, "Value": self.value} for name in Names]}


def test_steps_asking_in_the_same_turn_share_one_threaded_read() -> None:
    switch = ThreadedSwitch([Mode.ENFORCE])

    async def wave() -> list[tuple[bool, str]]:
        reads = SwitchReads(switch)
        return list(await asyncio.gather(*(reads.still_enforcing() for _ in range(5))))

    assert asyncio.run(wave()) == [(True, "")] * 5
    assert len(switch.threads) == 1
    assert switch.threads[0] != threading.get_ident()


def test_a_step_asking_while_a_read_is_under_way_gets_a_read_of_its_own() -> None:
    switch = ThreadedSwitch([Mode.ENFORCE, Mode.OFF])
    entered, release = threading.Event(), threading.Event()
    read = switch.read

    def slow_read() -> Mode:
        # Read first, then wait: the reads' order is the asking order, whatever the threads do.
        mode = read()
        entered.set()
        release.wait(5)
        return mode

    switch.read = slow_read  # type: ignore[method-assign]

    async def two_steps() -> tuple[tuple[bool, str], tuple[bool, str]]:
        reads = SwitchReads(switch)
        first = asyncio.ensure_future(reads.still_enforcing())
        await asyncio.to_thread(entered.wait, 5)  # the first read is in its thread
        second = asyncio.ensure_future(reads.still_enforcing())
        release.set()
        return await first, await second

    first, second = asyncio.run(two_steps())
    assert first == (True, "")
    assert second == (False, "kill switch is now off")
    assert len(switch.threads) == 2


def test_a_switch_that_answers_from_its_fresh_cache_is_read_without_a_thread() -> None:
    switch = CachedSwitch([Mode.DRY_RUN], fresh=True)
    reads = SwitchReads(switch)
    assert asyncio.run(reads.still_enforcing()) == (False, "kill switch is now dry-run")
    assert (switch.threads, reads.reads) == ([], 0)


def test_a_stale_cache_is_read_in_a_thread() -> None:
    switch = CachedSwitch([Mode.ENFORCE], fresh=False)
    reads = SwitchReads(switch)
    assert asyncio.run(reads.still_enforcing()) == (True, "")
    assert reads.reads == 1
    assert len(switch.threads) == 1


def test_ssm_switch_cached_answers_only_what_read_would_without_calling_ssm() -> None:
    clock = [100.0]
    ssm = StubSsm("enforce")
    switch = SsmModeSwitch("/env/mode", client=ssm, max_age_seconds=5.0, clock=lambda: clock[0])  # type: ignore[arg-type]
    assert switch.cached() is None  # never read: read() would call SSM
    assert switch.read() is Mode.ENFORCE
    ssm.value = "off"
    clock[0] += 4.9
    assert switch.cached() is Mode.ENFORCE
    assert ssm.calls == 1
    clock[0] += 0.1
    assert switch.cached() is None
    assert switch.read() is Mode.OFF
    assert ssm.calls == 2


def test_the_executor_stops_the_steps_after_the_switch_turns_off_mid_run() -> None:
    old = [room(f"lesson-{i}", NOW - timedelta(hours=2)) for i in range(3)]
    service = InMemoryRoomService(old)
    policy = ReaperPolicy(max_age_minutes=60)
    plan = plan_reap(old, policy, NOW)
    switch = ThreadedSwitch([Mode.ENFORCE, Mode.OFF])
    executor = ReapExecutor(
        rooms=service,
        concurrency=1,
        deadline=time.monotonic() + 60,
        request_timeout_seconds=1.0,
        mode_switch=switch,
        now=NOW,
    )
    results = asyncio.run(executor.run(plan.to_act))
    assert [r.outcome for r in results] == [Outcome.DONE, Outcome.SKIPPED, Outcome.SKIPPED]
    assert results[1].reason == "kill switch is now off"
    assert sorted(service.rooms) == ["lesson-1", "lesson-2"]


def test_each_wave_of_steps_counts_one_read() -> None:
    switch = ThreadedSwitch([Mode.ENFORCE])

    async def two_waves() -> int:
        reads = SwitchReads(switch)
        for _ in range(2):
            await asyncio.gather(reads.still_enforcing(), reads.still_enforcing())
        return reads.reads

    assert asyncio.run(two_waves()) == 2


class FailingSwitch:
    def read(self) -> Mode:
        raise RuntimeError("ssm unreachable")


def test_a_read_that_fails_fails_every_step_that_asked_and_leaves_the_loop_clean() -> None:
    async def wave() -> tuple[list[BaseException | tuple[bool, str]], list[dict[str, Any]]]:
        loop_errors: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: loop_errors.append(context))
        reads = SwitchReads(FailingSwitch())
        steps = (reads.still_enforcing(), reads.still_enforcing())
        answers = await asyncio.wait_for(asyncio.gather(*steps, return_exceptions=True), 2)
        await asyncio.sleep(0)
        return answers, loop_errors

    answers, loop_errors = asyncio.run(wave())
    assert [str(answer) for answer in answers] == ["ssm unreachable", "ssm unreachable"]
    assert all(isinstance(answer, RuntimeError) for answer in answers)
    assert loop_errors == []


def test_a_finished_read_leaves_no_error_on_the_loop() -> None:
    async def one_step() -> list[dict[str, Any]]:
        loop_errors: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: loop_errors.append(context))
        await SwitchReads(ThreadedSwitch([Mode.ENFORCE])).still_enforcing()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return loop_errors

    assert asyncio.run(one_step()) == []
