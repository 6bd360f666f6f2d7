"""Per-task TTS reach (pure): which task, if any, fails on its own, from one row per task; the one
verdict the drainer's tick, a suspect-worker event and the responder all reach.

Each task is tested against its own volume (a one-sided binomial test on its first-audio timeouts)
and against the fleet's (the baseline is the rest of the fleet's timeout rate when that is higher
than the healthy rate), at the stated significance of ``TaskReachSettings.level``. When a share of
the fleet fails on its own the failure is fleet-wide: nobody is suspect (notify, do not drain).

A caller that remembers the previous tick's failing tasks (``earlier``: the drainer's tick) gets a
suspect only at its second sighting, and only while no other task started failing since: the first
task of a spreading failure looks like a lone dead task until the second one fails beside it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.domain.group_verdict import GroupEvent, TaskFacts, find_group_event

# Terms of the binomial tail below this share of the running sum no longer change the decision.
TAIL_PRECISION = 1e-12


@dataclass(frozen=True, slots=True)
class TaskReach:
    """One task's TTS lines in the window: one row of the per-task query."""

    log_stream: str
    responses: int
    first_frames: int
    timeouts: int
    # First frames that came after their response's timeout: slow responses, not silent ones.
    late_frames: int = 0
    tts_endpoint: str = ""

    @property
    def missing(self) -> int:
        """Responses whose first frame never came (a timeout not followed by a late frame)."""
        return max(0, self.timeouts - self.late_frames)


@dataclass(frozen=True)
class TaskVerdict:
    log_stream: str
    responses: int
    timeouts: int  # missing first frames: timeouts not followed by a late frame
    baseline_rate: float
    p_value: float
    suspect: bool


@dataclass(frozen=True)
class TaskReachAssessment:
    tested: tuple[TaskVerdict, ...]  # the tasks with at least ``min_timeouts`` missing first frames
    fleet_wide: bool
    level: float
    tasks: int
    reason: str
    group: GroupEvent | None = None
    failing: tuple[str, ...] = ()  # streams failing at the looser level ``trend_p``
    # Suspects new since the previous tick beside one seen before: held a tick (a group forming?).
    spreading: tuple[str, ...] = ()

    @property
    def shared(self) -> bool:
        """The failure is shared (fleet-wide or a group): notify, drain nobody."""
        return self.fleet_wide or self.group is not None

    @property
    def suspects(self) -> tuple[TaskVerdict, ...]:
        """Most significant first."""
        return tuple(sorted((v for v in self.tested if v.suspect), key=lambda v: (v.p_value, v.log_stream)))


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p); 1.0 when k is at or below the mean (never significant)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if k <= n * p:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    term = math.exp(
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q
    )
    total, i = term, k
    # Above the mean each term is smaller than the one before: stop once they no longer count.
    while i < n and term > total * TAIL_PRECISION:
        term *= (n - i) / (i + 1) * p / (1 - p)
        total += term
        i += 1
    return min(1.0, total)


def _young(facts: Sequence[TaskFacts], now: datetime | None, settings: TaskReachSettings) -> set[str]:
    """The streams of tasks still in their warm-up allowance."""
    if now is None or not settings.warmup_minutes:
        return set()
    allowance = timedelta(minutes=settings.warmup_minutes)
    return {t.log_stream for t in facts if t.started_at is not None and now - t.started_at < allowance}


def assess_task_reach(
    rows: Iterable[TaskReach],
    settings: TaskReachSettings,
    tasks: int,
    facts: Sequence[TaskFacts] = (),
    now: datetime | None = None,
    earlier: Collection[str] | None = None,
) -> TaskReachAssessment:
    """``rows``: one per log stream in the window; ``tasks``: the running tasks of the service (the
    test's multiplicity; a stream without lines is a task with nothing to test); ``facts``: what ECS
    says about the running tasks (their groups and start times), ``now`` the time of the window's end;
    ``earlier``: the streams failing at the previous tick (None: not remembered, no sighting rule).

    One verdict for every path (the drainer's tick, a suspect-worker event, the responder): a task
    is suspect only when it fails on its own, the failure is not fleet-wide, and no group it shares
    with other failing tasks explains it."""
    listed = list(rows)
    responses = sum(r.responses for r in listed)
    missing = sum(r.missing for r in listed)
    fleet = max(tasks, len(listed))
    level = settings.level(fleet)
    young = _young(facts, now, settings)
    verdicts: list[TaskVerdict] = []
    failing: list[str] = []
    for row in listed:
        # A timeout follows its response by the emitter's deadline, so it may count one the window missed.
        n = max(row.responses, row.timeouts)
        own = binomial_tail(row.missing, n, settings.expected_timeout_rate)
        warming = row.log_stream in young and row.first_frames > 0
        # "Is anyone else failing too?" asks at a looser level than the cordon: a spreading failure's
        # tasks are counted while they cross it, not only once each is past the cordon's level.
        if row.missing >= 2 and own <= max(settings.trend_p, level) and not warming:
            failing.append(row.log_stream)
        if row.missing < settings.min_timeouts:
            continue
        rest_n, rest_k = responses - row.responses, missing - row.missing
        baseline = min(max(settings.expected_timeout_rate, rest_k / rest_n if rest_n > 0 else 0.0), 1 - 1e-9)
        p = own if baseline == settings.expected_timeout_rate else binomial_tail(row.missing, n, baseline)
        large = row.missing >= settings.min_failing_share * row.responses
        verdicts.append(
            TaskVerdict(
                row.log_stream, row.responses, row.missing, baseline, p, large and p <= level and not warming
            )
        )
    endpoints = {row.log_stream: row.tts_endpoint for row in listed if row.tts_endpoint}
    found = _Shared(failing, fleet, level, len(young)).judged(verdicts, facts, endpoints, settings)
    if earlier is None or found.shared:
        return found
    # Failing since before the window (no first frame in it at all) counts as seen before.
    return _sighted(found, set(earlier), {row.log_stream for row in listed if row.first_frames == 0})


def among(found: TaskReachAssessment, streams: Collection[str]) -> TaskReachAssessment:
    """``found`` with suspects only among ``streams`` (the running tasks': a replaced task's stream
    is history)."""
    kept = tuple(v for v in found.tested if v.log_stream in streams or not v.suspect)
    return dataclasses.replace(found, tested=kept)


def _sighted(found: TaskReachAssessment, earlier: set[str], silent: set[str]) -> TaskReachAssessment:
    """A suspect stands at its second sighting (or when silent the whole window), and only while no
    other task became a suspect since the previous tick: a failure appearing on a second task while
    the first still fails may be a group forming, which the next tick tells."""
    suspects = {v.log_stream for v in found.suspects}
    if not suspects:
        return found
    seen = suspects & (earlier | silent)
    new = tuple(sorted(suspects - earlier))
    if not seen:
        reason = "first sighting: cordoned at the next tick if it still fails alone"
    elif new and len(suspects) > 1:
        seen = set()
        reason = f"{len(new)} more task(s) began failing since the last tick: held a tick (a group forming?)"
    else:
        reason, new = found.reason, ()
    tested = tuple(dataclasses.replace(v, suspect=v.suspect and v.log_stream in seen) for v in found.tested)
    return dataclasses.replace(found, tested=tested, reason=reason, spreading=new)


@dataclass(frozen=True)
class _Shared:
    """The tasks failing at the looser level, and what they say about the whole fleet."""

    failing: list[str]
    fleet: int
    level: float
    warming: int

    def judged(
        self,
        verdicts: list[TaskVerdict],
        facts: Sequence[TaskFacts],
        endpoints: dict[str, str],
        settings: TaskReachSettings,
    ) -> TaskReachAssessment:
        failing, fleet = self.failing, self.fleet
        fleet_wide = len(failing) >= 2 and len(failing) >= settings.fleet_wide_fraction * fleet
        group = None if fleet_wide else find_group_event(failing, facts, endpoints, settings)
        if fleet_wide or group is not None:
            verdicts = [dataclasses.replace(v, suspect=False) for v in verdicts]
        if fleet_wide:
            share = f"{settings.fleet_wide_fraction:.0%}"
            reason = f"{len(failing)} of {fleet} tasks fail (>= {share}): fleet-wide"
        elif group is not None:
            reason = group.describe()
        else:
            suspects = sum(v.suspect for v in verdicts)
            reason = f"{suspects} of {fleet} tasks fail beyond chance (p <= {self.level:.3g})"
            reason += f"; {self.warming} in warm-up" if self.warming else ""
        return TaskReachAssessment(
            tuple(verdicts), fleet_wide, self.level, fleet, reason, group, tuple(failing)
        )
