"""ECS's tasks with the drainer's own recent tag writes laid over their tags.

ECS is eventually consistent: for a while after TagResource or UntagResource, DescribeTasks may
still show a task's old tags. A run that decided on that echo alone could cordon a task it cordoned
a moment ago, re-check a guardrail without its own last cordon, or undo an undrain. So every task
read through this view shows, for ``OWN_WRITES_TRUSTED_SECONDS`` after each of the drainer's tag
writes, the tags as that write left them (the write is newer than any echo that lacks it); after
that, ECS's own tags. The writes are this run's (kept as they are made) and earlier runs' (read
from the ledger for the snapshot and again under the service's lease; each step's writes are
recorded there after the step, before its run lets the lease go).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from fleet_remediation.core.errors import RemediationError
from worker_drainer.adapters.ecs_model import EcsTask, ServiceCapacity, TaskProtection, task_id_of
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.adapters.journal_model import AuditKey, TagWrite
from worker_drainer.adapters.ledger import Ledger

# How long ECS may show a write late, as far as the drainer is concerned: ECS documents the
# behaviour without a figure; half a tick, six times the service profile's assumed p99 (5 s).
OWN_WRITES_TRUSTED_SECONDS = 30.0


class TagsAsWritten:
    """An ``EcsTaskService`` whose reads show the drainer's own recent tag writes."""

    def __init__(self, ecs: EcsTaskService, ledger: Ledger, clock: Callable[[], datetime]) -> None:
        self.inner, self._ledger, self._clock = ecs, ledger, clock
        self._writes: list[TagWrite] | None = None
        self._mine: list[TagWrite] = []
        self._unrecorded: dict[str, TagWrite] = {}
        # Why the earlier runs' writes could not be read (then only ECS's tags and this run's show).
        self.unread: RemediationError | None = None

    @property
    def calls(self) -> int:
        return self.inner.calls

    @calls.setter
    def calls(self, value: int) -> None:
        self.inner.calls = value

    def _loaded(self) -> list[TagWrite]:
        """Earlier runs' writes (read from the ledger when first needed), then this run's."""
        if self._writes is None:
            try:
                self._writes = self._ledger.tag_writes_since(self._trusted_since())
                self.unread = None
            except RemediationError as exc:
                self.unread, self._writes = exc, []
        return self._writes + self._mine

    def refresh(self) -> None:
        """Read earlier runs' writes again: under the service's lease, every run that held it before
        has recorded its writes."""
        self._writes = None

    def recent_writes(self) -> list[TagWrite]:
        """The drainer's tag writes still trusted over ECS's reads, oldest first."""
        since = self._trusted_since()
        return sorted((write for write in self._loaded() if write.at >= since), key=lambda write: write.at)

    def _trusted_since(self) -> datetime:
        return self._clock() - timedelta(seconds=OWN_WRITES_TRUSTED_SECONDS)

    def as_written(self, task: EcsTask) -> EcsTask:
        tags = dict(task.tags)
        for write in self.recent_writes():
            if write.task_id == task.task_id:
                tags = write.applied_to(tags)
        return task if tags == dict(task.tags) else replace(task, tags=tags)

    def running_tasks(self) -> list[EcsTask]:
        return [self.as_written(task) for task in self.inner.running_tasks()]

    def describe_task(self, task: str) -> EcsTask | None:
        found = self.inner.describe_task(task)
        return None if found is None else self.as_written(found)

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None:
        self.inner.tag_task(task_arn, tags)
        self._wrote(TagWrite(task_id_of(task_arn), self._clock(), dict(tags)))

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        self.inner.untag_task(task_arn, keys)
        self._wrote(TagWrite(task_id_of(task_arn), self._clock(), removed=tuple(keys)))

    def _wrote(self, write: TagWrite) -> None:
        self._mine.append(write)
        earlier = self._unrecorded.get(write.task_id)
        self._unrecorded[write.task_id] = earlier.then(write) if earlier else write

    def record(self, key: AuditKey) -> None:
        """The tags the step ``key`` wrote, to the ledger: one item per task it changed."""
        unrecorded, self._unrecorded = self._unrecorded, {}
        for write in unrecorded.values():
            self._ledger.record_tag_write(key, write)

    def protection(self, task_arn: str) -> TaskProtection:
        return self.inner.protection(task_arn)

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        self.inner.set_protection(task_arn, enabled, expires_in_minutes)

    def stop_task(self, task_arn: str, reason: str) -> None:
        self.inner.stop_task(task_arn, reason)

    def capacity(self) -> ServiceCapacity:
        return self.inner.capacity()

    def ecs_managed_tags(self) -> bool:
        return self.inner.ecs_managed_tags()

    def deployment_in_progress(self) -> str | None:
        return self.inner.deployment_in_progress()

    def set_desired_count(self, count: int) -> None:
        self.inner.set_desired_count(count)


def tags_as_written(ecs: EcsTaskService, ledger: Ledger, clock: Callable[[], datetime]) -> TagsAsWritten:
    """``ecs`` as the drainer wrote it (unchanged when it already is)."""
    return ecs if isinstance(ecs, TagsAsWritten) else TagsAsWritten(ecs, ledger, clock)
