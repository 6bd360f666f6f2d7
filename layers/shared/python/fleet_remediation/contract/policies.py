"""Policies: what each function may do, and how far it may go. Validated at synth (cdk.json) and at
cold start (the function's settings), from this one definition."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from fleet_remediation.contract.models import Minutes, StrictModel, check_regex


class RoomRule(StrictModel):
    """One ordered rule: the first rule whose ``name_pattern`` matches a room's whole name applies."""

    name_pattern: str = Field(description="Regular expression matched against the whole room name.")
    max_age_minutes: Minutes | None = Field(default=None, description="Max age for matching rooms.")
    protected: bool = Field(default=False, description="Matching rooms are never reaped.")
    description: str = Field(default="", description="Why the rule exists (shown in reports).")

    _check_pattern = field_validator("name_pattern")(check_regex)

    @model_validator(mode="after")
    def _protected_xor_age(self) -> RoomRule:
        if self.protected == (self.max_age_minutes is not None):
            raise ValueError("a rule sets exactly one of 'protected: true' or 'max_age_minutes'")
        return self


# A manual run's stricter max age may not go below this: a younger room is a lesson starting, never a
# zombie, and a typo of seconds for minutes must not empty the fleet.
MIN_MANUAL_MAX_AGE_SECONDS = 60


class ReaperPolicy(StrictModel):
    """What the zombie reaper may delete, and how much per run."""

    managed_room_pattern: str = Field(
        default=".*", description="Rooms whose whole name does not match are ignored entirely."
    )
    max_age_minutes: Minutes = Field(default=60, description="Default max room age (incident: P0, 1 h).")
    rules: tuple[RoomRule, ...] = ()
    max_deletions_per_run: int = Field(
        default=20, ge=1, le=1000, description="Deletions and warnings per run (oldest rooms first)."
    )
    delete_concurrency: int = Field(default=5, ge=1, le=50, description="Room deletions in flight at once.")
    live_room_grace_minutes: int = Field(
        default=10,
        ge=0,
        le=24 * 60,
        description=(
            "A room past its max age with participants is warned (a LiveKit data message, the time "
            "recorded in the room's metadata) and deleted by a run this long after; an empty room "
            "goes at once. 0 deletes rooms with participants at once too."
        ),
    )

    @property
    def live_room_grace_seconds(self) -> float | None:
        return self.live_room_grace_minutes * 60.0 if self.live_room_grace_minutes else None

    _check_pattern = field_validator("managed_room_pattern")(check_regex)


class CapacityMode(StrEnum):
    # Raise the service's desired count by one at cordon, lower it again when the task stops.
    DESIRED_COUNT = "desired-count"
    # Change nothing: the service starts a replacement when the cordoned task stops.
    SERVICE_REPLACES = "service-replaces"


class DrainerPolicy(StrictModel):
    """When a worker counts as degraded, and how far the drainer may go."""

    window_minutes: Minutes = Field(default=30, description="Log window the statistics cover.")
    resident_min_warnings: int = Field(
        default=100,
        ge=1,
        description="Slow-inference warnings that make a resident problem (seed: hundreds).",
    )
    resident_min_span_minutes: float = Field(
        default=10, gt=0, description="...spread over at least this long (seed: tens of minutes)."
    )
    degraded_min_rate_per_minute: float = Field(
        default=3.0, gt=0, description="Warnings per minute of window above which a worker is elevated."
    )
    outlier_factor: float = Field(
        default=5.0, ge=1, description="An elevated worker is an outlier at this many times the fleet median."
    )
    fleet_wide_fraction: float = Field(
        default=0.5, gt=0, le=1, description="At this fraction of elevated workers the problem is fleet-wide."
    )
    warmup_max_warnings: int = Field(default=10, ge=0, description="A burst this small is a warm-up ...")
    warmup_max_span_seconds: float = Field(
        default=30, ge=0, description="... if it lasts at most this long ..."
    )
    warmup_max_delay_seconds: float = Field(
        default=2.0, ge=0, description="... and never falls this far behind."
    )
    max_draining_tasks: int = Field(default=1, ge=1, description="K: tasks draining at once.")
    max_draining_fraction: float = Field(
        default=0.2, gt=0, le=1, description="Fleet fraction draining at once."
    )
    min_healthy_tasks: int = Field(
        default=2, ge=0, description="Never fewer healthy running tasks than this."
    )
    cooldown_minutes: Minutes = Field(default=60, description="A task is not marked again this soon after.")
    recovery_minutes: Minutes = Field(default=10, description="Normal this long before stopping: unmarked.")
    tts_recovery_min_jobs: int = Field(
        default=3,
        ge=1,
        description="A TTS-suspect cordon is undone after this many of the worker's jobs since the cordon "
        "reached first audio, none failing.",
    )
    reap_grace_minutes: Minutes = Field(
        default=3, description="After a reap, wait this long before cordoning."
    )
    drain_deadline_minutes: Minutes | None = Field(
        default=None, description="Stop a draining task at this age even with jobs (default: reaper max age)."
    )
    capacity_mode: CapacityMode = Field(
        default=CapacityMode.DESIRED_COUNT,
        description="desired-count: raise the desired count by one at the cordon; service-replaces: the "
        "service replaces the task when it stops.",
    )
    worker_http_port: int = Field(default=8081, ge=1, le=65535, description="The agents worker's HTTP port.")
    worker_http_timeout_seconds: float = Field(
        default=2.0, gt=0, le=10, description="Deadline of one /worker request to a task."
    )
    lease_seconds: int = Field(
        default=220, ge=10, le=900, description="How long one acting invocation holds the service's lease."
    )
    lease_wait_seconds: float = Field(
        default=20, ge=0, le=300, description="How long an invocation waits for another's lease."
    )

    @model_validator(mode="after")
    def _recovery_fits_window(self) -> DrainerPolicy:
        if self.recovery_minutes > self.window_minutes:
            raise ValueError(
                f"recovery_minutes ({self.recovery_minutes}) must not exceed window_minutes "
                f"({self.window_minutes}): recovery is judged from the window's statistics"
            )
        return self

    @model_validator(mode="after")
    def _never_the_whole_fleet(self) -> DrainerPolicy:
        if self.min_healthy_tasks == 0 and self.max_draining_fraction >= 1:
            raise ValueError(
                "min_healthy_tasks 0 with max_draining_fraction 1.0 lets the drainer cordon every task of "
                "the service at once; raise min_healthy_tasks or lower max_draining_fraction"
            )
        return self

    def drain_deadline_seconds(self, reaper: ReaperPolicy) -> float:
        # No room outlives the reaper's max age, so no job needs longer than that to end.
        minutes = self.drain_deadline_minutes or reaper.max_age_minutes
        return minutes * 60.0
