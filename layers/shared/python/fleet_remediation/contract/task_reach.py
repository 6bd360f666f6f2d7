"""Per-task TTS reach: the settings of the test that finds one silent task in a fleet of any size
(the decision record is docs/decisions/0010-per-task-detection.md).

A fleet-wide rate cannot see one task in a thousand, whose share of the responses is 0.1 %. So the
drainer's tick reads one row per task (responses, first frames, first-audio timeouts over the last
``window_minutes``) and tests each task against its own volume: under "this task is healthy" each of
its responses times out independently with the baseline rate (the configured healthy rate, or the
rest of the fleet's observed rate when that is higher: a provider outage makes no task stand out).

A task is suspect only when its failure is also large: at least ``min_failing_share`` of its
responses in the window time out (a task that stopped producing first frames times out nearly all
of them; a healthy task's rare hangs, however unlikely their cluster, stay a small share).

Significance, stated: the tick tests every task every ``tick_minutes``; with ``false_cordons_per_day``
= a, a task is suspect only when its p-value is at most a / (tests a day x tasks) (Bonferroni over
the tasks and over the day's ticks), so a healthy fleet of any size cordons by chance at most a
times a day, in expectation.
"""

from __future__ import annotations

from pydantic import Field

from fleet_remediation.contract.models import StrictModel

MINUTES_PER_DAY = 1440


class TaskReachSettings(StrictModel):
    window_minutes: int = Field(default=3, ge=1, le=30, description="Minutes each tick reads, per task.")
    tick_minutes: int = Field(default=1, ge=1, le=60, description="How often the drainer's tick tests.")
    expected_timeout_rate: float = Field(
        default=0.001, gt=0, lt=1, description="Share of a healthy task's responses that time out."
    )
    false_cordons_per_day: float = Field(
        default=0.01, gt=0, le=1, description="Chance cordons a day a healthy fleet may expect, at most."
    )
    min_timeouts: int = Field(default=3, ge=1, description="Never suspect a task on fewer timeouts.")
    min_failing_share: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Never suspect a task with a smaller share of its window's responses timing out.",
    )
    fleet_wide_fraction: float = Field(
        default=0.2,
        gt=0,
        le=1,
        description="At this share of tasks failing on their own the failure is fleet-wide: notify only.",
    )
    trend_p: float = Field(
        default=0.001,
        gt=0,
        lt=1,
        description=(
            "A looser level: a task with >= 2 missing first frames at this p-value is 'failing too' when "
            "the rule asks whether the failure is shared (fleet-wide, or by a group)."
        ),
    )
    group_alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description=(
            "A group (zone, task-definition revision, TTS endpoint, start cohort) holding this many of the "
            "failing tasks by chance at most this often is a group event: notify, drain nobody."
        ),
    )
    group_min_tasks: int = Field(default=2, ge=2, description="Failing tasks a group event needs, at least.")
    group_hold_minutes: int = Field(
        default=15,
        ge=0,
        le=240,
        description="After a group event was last seen, no task is cordoned on TTS evidence for this long.",
    )
    start_cohort_minutes: int = Field(
        default=10, ge=1, le=1440, description="Tasks started within the same such slice form a start cohort."
    )
    warmup_minutes: float = Field(
        default=5.0,
        ge=0,
        le=60,
        description="A task this young is suspect only when silent (no first frame at all in the window).",
    )

    def level(self, tasks: int) -> float:
        """The per-task, per-tick significance for a fleet of ``tasks``."""
        tests_a_day = MINUTES_PER_DAY / self.tick_minutes
        return self.false_cordons_per_day / (tests_a_day * max(tasks, 1))

    def describe(self) -> str:
        return (
            f"per task, last {self.window_minutes} min: first-audio timeouts >= {self.min_timeouts} and "
            f">= {self.min_failing_share:.0%} of its responses, and "
            f"binomial p <= {self.false_cordons_per_day:g}/day / (ticks a day x tasks) against "
            f"max({self.expected_timeout_rate:.2%}, the rest of the fleet's rate); fleet-wide (no "
            f"cordon) at {self.fleet_wide_fraction:.0%} of tasks failing; a group event (no cordon) when "
            f">= {self.group_min_tasks} failing tasks share a zone, revision, TTS endpoint or start cohort "
            f"beyond chance (p <= {self.group_alpha:g}); tasks younger than {self.warmup_minutes:g} min "
            "only when silent"
        )
