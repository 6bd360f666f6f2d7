"""The functions' own cdk.json sections (``environments.<env>.reaper``, ``.tts_reach``, ``.drainer``).

Each section checks its cross-field rules (budgets that must fit the Lambda timeout, a lease that must
outlive an invocation), so synth and cold start reject the same values; ``settings.py`` embeds them whole.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from fleet_remediation.contract import budgets
from fleet_remediation.contract.models import StrictModel
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy
from fleet_remediation.contract.task_reach import TaskReachSettings


class ReaperSection(StrictModel):
    """``environments.<env>.reaper``."""

    schedule_minutes: int = Field(default=5, ge=1, le=60, description="How often the reaper runs.")
    timeout_seconds: int = Field(default=120, ge=10, le=900, description="Lambda timeout.")
    livekit_request_timeout_seconds: float = Field(
        default=5.0, gt=0, le=30, description="Deadline of one LiveKit API request, the whole request."
    )
    policy: ReaperPolicy = ReaperPolicy()

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> ReaperSection:
        _run_fits(
            budgets.reaper_seconds_needed(self.livekit_request_timeout_seconds),
            self.timeout_seconds,
            "kill switch, the run's once-only record, credentials, the room listing and one room at "
            f"livekit_request_timeout_seconds={self.livekit_request_timeout_seconds:g} each, the "
            "agent service's deployments, the action events, the notification, the report",
        )
        return self


class TtsReachSection(StrictModel):
    """``environments.<env>.tts_reach``: the responder function; its alarm lives in ``detection``."""

    timeout_seconds: int = Field(default=120, ge=10, le=900, description="Lambda timeout.")
    query_timeout_seconds: float = Field(default=20, gt=0, le=300, description="Per Logs Insights query.")
    recheck_minutes: int = Field(
        default=2,
        ge=0,
        le=60,
        description="Re-check the open incident this often while the TTS page stays in ALARM (0: never).",
    )
    recheck_max_minutes: int = Field(
        default=32,
        ge=0,
        le=240,
        description="Re-checks back off while the page stays in ALARM: each gap twice the last, up to "
        "this (recheck_minutes: no back-off). The ALARM's own look is never delayed.",
    )

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> TtsReachSection:
        if self.recheck_minutes and self.recheck_max_minutes < self.recheck_minutes:
            raise ValueError(
                f"recheck_max_minutes ({self.recheck_max_minutes}) must be at least recheck_minutes "
                f"({self.recheck_minutes})"
            )
        _query_can_start("query_timeout_seconds", self.query_timeout_seconds)
        _run_fits(
            budgets.tts_reach_seconds_needed(self.query_timeout_seconds),
            self.timeout_seconds,
            f"kill switch, the page's state, two queries of query_timeout_seconds="
            f"{self.query_timeout_seconds:g}, the ECS facts of their tasks, the suspect-worker event, "
            "the action events and the "
            "notification with their once-only records, the report",
        )
        return self


class ScanBudgetSection(StrictModel):
    """``environments.<env>.scan_budget``: the ceiling on what the functions' Logs Insights looks at
    the agents' logs scan in one clock hour, shared by the responder and the drainer of every agent
    service of the environment (one tally).

    A look is estimated before it starts (the log group's IncomingBytes over its window); a re-check
    is skipped when it would pass what is left; any look is skipped when the hour is spent or its
    spend unreadable, and stopped when its bytes scanned pass what is left. A look a new ALARM
    triggers (the responder's ALARM analysis, the drainer on the VAD ALARM or a suspect worker) is
    not held back by its estimate, but an alarm gets at most one look per ``alarm_look_minutes``.
    Every look counts, however it ends. The dashboard's queries are not the functions' and fall
    outside it."""

    gb_per_hour: float = Field(
        default=10.0,
        ge=0,
        le=100_000,
        description="GB scanned per clock hour by the functions (0: no ceiling).",
    )
    alarm_look_minutes: int = Field(
        default=10,
        ge=0,
        le=1440,
        description="At most one look per alarm in this many minutes, however often it flaps (0: no limit).",
    )

    @property
    def bytes_per_hour(self) -> float | None:
        return self.gb_per_hour * 1e9 if self.gb_per_hour else None


class DrainerVpcConfig(StrictModel):
    """Run the drainer inside the agents' VPC so it can read each task's ``/worker`` endpoint."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]+$", description="The agents' VPC.")
    subnet_ids: tuple[str, ...] = Field(min_length=1, description="Subnets the drainer runs in.")
    security_group_ids: tuple[str, ...] = Field(
        min_length=1, description="Groups that let the drainer reach the tasks' /worker port."
    )

    @model_validator(mode="after")
    def _ids_look_like_ids(self) -> DrainerVpcConfig:
        for index, subnet in enumerate(self.subnet_ids):
            if not subnet.startswith("subnet-"):
                raise ValueError(f"subnet_ids[{index}] {subnet!r} is not a subnet id")
        for index, group in enumerate(self.security_group_ids):
            if not group.startswith("sg-"):
                raise ValueError(f"security_group_ids[{index}] {group!r} is not a security group id")
        return self


class TaskActionScope(StrEnum):
    """Which tasks the drainer's IAM policy lets it stop, tag, untag and (un)protect.

    ``service``: only tasks carrying the ECS managed tag ``aws:ecs:serviceName`` = our service, which
    ECS sets only when the service has ``enableECSManagedTags`` on (the drainer checks that before it
    acts). ``cluster``: any task of the agents' cluster, for a service without managed tags.
    """

    SERVICE = "service"
    CLUSTER = "cluster"


class DrainerSection(StrictModel):
    """``environments.<env>.drainer``."""

    schedule_minutes: int = Field(default=1, ge=1, le=60, description="Reconcile tick.")
    # The run's worst case is 214 s (contract/budgets.py): the default leaves a margin above it.
    timeout_seconds: int = Field(default=220, ge=20, le=900, description="Lambda timeout.")
    livekit_request_timeout_seconds: float = Field(
        default=5.0, gt=0, le=30, description="Deadline of one LiveKit API request, the whole request."
    )
    ecs_request_timeout_seconds: float = Field(
        default=5.0, gt=0, le=30, description="Read timeout of one ECS API attempt."
    )
    insights_timeout_seconds: float = Field(
        default=22.0,
        gt=0,
        le=120,
        description="Per Logs Insights query: a per-task look at the service profile's p99 needs 21.25 s.",
    )
    agent_log_stream_prefix: str = Field(
        default="agent", min_length=1, description="awslogs-stream-prefix of the agent container."
    )
    agent_container_name: str | None = Field(
        default=None, description="The agent container's name (default: the ECS service name)."
    )
    vpc: DrainerVpcConfig | None = None
    task_action_scope: TaskActionScope = Field(
        default=TaskActionScope.SERVICE,
        description="service: task changes only on tasks tagged aws:ecs:serviceName=<service>; cluster: "
        "any task of the cluster.",
    )
    policy: DrainerPolicy = DrainerPolicy()
    task_reach: TaskReachSettings = Field(
        default=TaskReachSettings(), description="The tick's per-task test of first-audio timeouts."
    )

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> DrainerSection:
        _query_can_start("insights_timeout_seconds", self.insights_timeout_seconds)
        _run_fits(
            budgets.drainer_seconds_needed(self.insights_timeout_seconds, self.ecs_request_timeout_seconds),
            self.timeout_seconds,
            f"kill switch, the VAD alarm's state, credentials, {budgets.DRAINER_QUERIES} queries of "
            f"insights_timeout_seconds={self.insights_timeout_seconds:g}, one step with ECS calls of "
            f"ecs_request_timeout_seconds={self.ecs_request_timeout_seconds:g}, the open intents and "
            "recent tag writes, the action events, the notification, the report",
        )
        return self

    @model_validator(mode="after")
    def _lease_outlives_invocation(self) -> DrainerSection:
        # A lease that expires while its holder still acts lets a second invocation act on the same
        # service at the same time.
        if self.policy.lease_seconds < self.timeout_seconds:
            raise ValueError(
                f"policy.lease_seconds ({self.policy.lease_seconds}) must be at least timeout_seconds "
                f"({self.timeout_seconds}): a lease must outlive the invocation that holds it"
            )
        return self


def _query_can_start(field: str, seconds: float) -> None:
    call = budgets.LOGS_INSIGHTS_QUERY_FLOOR_SECONDS
    if seconds < call:
        raise ValueError(
            f"{field} ({seconds:g}) must be at least the scan budget's calls, the StartQuery's, one "
            f"poll's and the stop's worst case ({call:g} s), or no query could ever start"
        )


def _run_fits(needed: float, timeout_seconds: int, parts: str) -> None:
    if needed > timeout_seconds:
        raise ValueError(
            f"a run needs up to {needed:g} s ({parts}: contract/budgets.py); "
            f"timeout_seconds is {timeout_seconds}"
        )
