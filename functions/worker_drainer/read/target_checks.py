"""Trust no event (pure): what a suspect-worker event and a manual task reference must satisfy
after the door (``core.door``, ``core.suspect_route``) let them in. A rejection is a typed error in
the one report, with no side effect: the suspect must be a RUNNING task of our service, and a manual
task ARN must name our account, region and cluster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from fleet_remediation.contract.events import ECS_TASK_ID_PATTERN, SuspectWorkerDetail
from fleet_remediation.core.door import FUNCTION_ARN, UntrustedEventError
from fleet_remediation.core.suspect_route import TASK_ID
from worker_drainer.adapters.ecs_model import EcsTask

TASK_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):ecs:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):(?P<account>\d{12}):"
    rf"task/(?:(?P<cluster>[A-Za-z0-9_-]{{1,255}})/)?(?P<id>{ECS_TASK_ID_PATTERN})$"
)


def validate_suspect_running(detail: SuspectWorkerDetail, tasks: Sequence[EcsTask], service: str) -> None:
    if detail.task_id not in {t.task_id for t in tasks}:
        raise UntrustedEventError(
            f"suspect-worker event refused: {detail.task_id} is not a RUNNING task of service {service}",
            resource=detail.task_id,
        )


@dataclass(frozen=True)
class TaskReference:
    """A manual ``task``: an id, or an ARN (with the account, region and cluster it names)."""

    task_id: str
    arn: str | None = None
    account: str | None = None
    region: str | None = None
    cluster: str | None = None


def parse_task_reference(raw: str) -> TaskReference:
    """Raises ``ValueError`` (the manual event's validator turns it into ``InvalidEvent``)."""
    if TASK_ID.fullmatch(raw):
        return TaskReference(raw)
    found = TASK_ARN.fullmatch(raw)
    if found is None:
        raise ValueError(f"{raw[:120]!r} is neither an ECS task id nor an ECS task ARN")
    return TaskReference(found["id"], raw, found["account"], found["region"], found["cluster"])


@dataclass(frozen=True)
class ServiceIdentity:
    """Where our service lives; ``account``/``region`` come from the function's own ARN (unknown
    when run outside Lambda)."""

    cluster: str
    account: str | None = None
    region: str | None = None

    @classmethod
    def of(cls, cluster: str, function_arn: str | None) -> ServiceIdentity:
        found = FUNCTION_ARN.match(function_arn or "")
        return cls(cluster, found["account"], found["region"]) if found else cls(cluster)


def check_manual_target(ref: TaskReference, ours: ServiceIdentity, tasks: Sequence[EcsTask]) -> None:
    """An ARN must name our account, region and cluster, and be the ARN of our task with that id."""
    if ref.arn is None:
        return
    named = {"account": ref.account, "region": ref.region, "cluster": ref.cluster}
    expected = {"account": ours.account, "region": ours.region, "cluster": ours.cluster}
    wrong = [
        f"{part} {named[part]!r} (ours: {expected[part]!r})"
        for part in named
        if named[part] is not None and expected[part] is not None and named[part] != expected[part]
    ]
    same_id = next((t for t in tasks if t.task_id == ref.task_id), None)
    if not wrong and same_id is not None and same_id.arn != ref.arn:
        wrong.append(f"ARN differs from our task's {same_id.arn}")
    if wrong:
        raise UntrustedEventError(f"task {ref.arn} is not ours: {'; '.join(wrong)}", resource=ref.task_id)
