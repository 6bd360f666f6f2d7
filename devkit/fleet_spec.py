"""A simulated fleet's shape for ``devkit.fleet_counts`` (development only): its size, its traffic,
and the sweep over call length, response cadence and onset that each seed picks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from devkit.fleet_groups import GROUP_FAMILIES
from devkit.traffic import FAILURE_FAMILIES, NORMAL_TTS, SLOW_TTS, FailureKind, TtsLatency

HEALTHY = ("steady", "daily", "slow-tts")
FAMILIES = HEALTHY + FAILURE_FAMILIES
# The sweep: each seed draws one call length, one response cadence and one onset.
# Seeds 1 and 2 take the extremes: call-centre calls of 3 minutes and the seed's 17-minute lessons.
CALL_MINUTES = (3.0, 17.0, 2.0, 8.0, 5.0)
RESPONSE_GAP_SECONDS = (10.0, 18.0, 26.0)
SLOT_USE_AT_PEAK = 0.6


@dataclass(frozen=True)
class Fleet:
    family: str
    tasks: int
    responses_per_minute: float
    minutes: int
    seed: int
    call_minutes: float
    response_gap_seconds: float
    failure_start_minute: float | None = None
    failure_minutes: float = 40.0
    timeout_seconds: float = 10.0
    interrupt_probability: float = 0.005
    isolated_timeout_probability: float = 0.001

    @property
    def failure(self) -> FailureKind | None:
        return FailureKind(self.family) if self.family in FAILURE_FAMILIES else None

    @property
    def diurnal(self) -> bool:
        return self.family in ("daily", "slow-tts")

    @property
    def tts(self) -> TtsLatency:
        return SLOW_TTS if self.family == "slow-tts" else NORMAL_TTS

    @property
    def concurrent_calls(self) -> float:
        return self.responses_per_minute * self.response_gap_seconds / 60

    @property
    def calls_per_task(self) -> int:
        """Slots: the busiest hour uses about 60 % of them (at least the seed's 2)."""
        return max(2, math.ceil(self.concurrent_calls / (self.tasks * SLOT_USE_AT_PEAK)))

    def describe(self) -> dict[str, float | int | str | None]:
        return {
            "family": self.family,
            "tasks": self.tasks,
            "responses_per_minute": self.responses_per_minute,
            "seed": self.seed,
            "call_minutes": self.call_minutes,
            "response_gap_seconds": self.response_gap_seconds,
            "calls_per_task": self.calls_per_task,
            "failure_start_minute": self.failure_start_minute,
        }


def fleet(family: str, tasks: int, volume: float, minutes: int, seed: int) -> Fleet:
    """One point of the sweep: the seed picks the call length, the cadence and the onset."""
    rng = np.random.default_rng(seed * 7919 + tasks)
    call = float(CALL_MINUTES[(seed - 1) % len(CALL_MINUTES)])
    gap = float(RESPONSE_GAP_SECONDS[int(rng.integers(len(RESPONSE_GAP_SECONDS)))])
    start = 150 + float(rng.uniform(0, 60)) if family in FAILURE_FAMILIES + GROUP_FAMILIES else None
    return Fleet(family, tasks, volume, minutes, seed, call, gap, start)
