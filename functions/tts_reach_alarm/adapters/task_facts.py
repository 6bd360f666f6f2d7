"""What ECS says of the tasks in the responder's rows (DescribeTasks: availability zone,
task-definition revision, start time), the facts the shared group verdict needs. A task ECS could
not tell about (a failed or unstarted call, a stream that names no task id, a task ECS does not
know) is unknown, never "in no group": the responder names no task while any fact is unknown."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import TASK_FACTS_READ
from fleet_remediation.contract.events import ECS_TASK_ID_PATTERN
from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError, RemediationError, aws_api_errors
from fleet_remediation.domain.group_verdict import TaskFacts

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient

# DescribeTasks takes at most 100 tasks a call.
DESCRIBE_BATCH = 100
# The one ECS action the responder needs, on the agents' cluster's tasks (construct tts_reach.py).
TASK_FACTS_ACTIONS = ("ecs:DescribeTasks",)
_TASK_ID = re.compile(f"^(?:{ECS_TASK_ID_PATTERN})$")
RUNNING = "RUNNING"


@dataclass(frozen=True)
class FactsRead:
    """The running tasks' facts, the streams whose facts are unknown, and what went wrong. A
    described task that is not running is history: neither running nor unknown."""

    running: tuple[TaskFacts, ...] = ()
    unknown: tuple[str, ...] = ()
    errors: tuple[RemediationError, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.unknown

    def describe(self) -> str:
        """For the report and the message: what is known, and why the rest is not."""
        told = f"ECS facts of {len(self.running)} running task(s)"
        if self.complete:
            return told
        why = "; ".join(error.message for error in self.errors) or "ECS does not know them"
        return f"{told}; unknown for {len(self.unknown)} task(s) ({why})"


class TaskFactsReader(Protocol):
    def read(self, streams: Sequence[str], deadline: float) -> FactsRead:
        """The facts of the tasks whose log streams are ``streams``, by ``deadline`` (monotonic)."""
        ...


class EcsTaskFacts:
    """``TaskFactsReader`` over DescribeTasks in ``cluster``."""

    def __init__(self, cluster: str, client: ECSClient | None = None) -> None:
        self.cluster = cluster
        self._client = client or aws_client(TASK_FACTS_READ)

    def read(self, streams: Sequence[str], deadline: float) -> FactsRead:
        ids = {stream: task_id_from_log_stream(stream) for stream in streams}
        unknown = [stream for stream, task in ids.items() if not _TASK_ID.match(task)]
        asked = sorted((task, stream) for stream, task in ids.items() if _TASK_ID.match(task))
        running: list[TaskFacts] = []
        errors: list[RemediationError] = []
        for start in range(0, len(asked), DESCRIBE_BATCH):
            batch = dict(asked[start : start + DESCRIBE_BATCH])
            if time.monotonic() + TASK_FACTS_READ.worst_case_seconds > deadline:
                errors.append(
                    DeadlineExceededError(
                        f"ECS DescribeTasks: no time left for {len(asked) - start} task(s)",
                        resource=self.cluster,
                    )
                )
                unknown += [stream for _, stream in asked[start:]]
                break
            try:
                described = self._describe(list(batch))
            except AwsApiError as exc:
                errors.append(exc)
                unknown += batch.values()
                continue
            told = {
                task_id: _facts(batch[task_id], raw) for task_id, raw in described.items() if _running(raw)
            }
            running += [facts for facts in told.values() if _complete(facts)]
            unknown += [stream for task_id, stream in batch.items() if task_id not in described]
            unknown += [facts.log_stream for facts in told.values() if not _complete(facts)]
        return FactsRead(tuple(running), tuple(sorted(unknown)), tuple(errors))

    def _describe(self, task_ids: list[str]) -> dict[str, Mapping[str, Any]]:
        with aws_api_errors("ECS DescribeTasks", self.cluster):
            response = self._client.describe_tasks(cluster=self.cluster, tasks=task_ids)
        return {str(raw["taskArn"]).rsplit("/", 1)[-1]: raw for raw in response.get("tasks", [])}


def _running(raw: Mapping[str, Any]) -> bool:
    return raw.get("lastStatus") == RUNNING and raw.get("desiredStatus") == RUNNING


def _complete(facts: TaskFacts) -> bool:
    return bool(facts.availability_zone and facts.task_definition and facts.started_at)


def _facts(stream: str, raw: Mapping[str, Any]) -> TaskFacts:
    return TaskFacts(
        stream,
        str(raw.get("availabilityZone", "")),
        str(raw.get("taskDefinitionArn", "")),
        raw.get("startedAt"),
    )
