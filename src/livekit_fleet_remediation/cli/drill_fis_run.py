"""``lkfr drill --via fis``: the drill through the construct's AWS FIS experiment template.

It checks the service's prerequisites for FIS's ECS task actions (``drill_fis``), refuses as the
hook path does (a drill marker on a task, or an experiment of the template still active), starts
the experiment from the template tagged for the environment, service and fault (``drills.fis``),
reads which task FIS chose (``COUNT(1)``), refuses an excluded or draining one, watches the audit as
the hook path does, and stops the experiment at the end, also when the watch fails.

StartExperiment creates an experiment: it is made once, never retried (one attempt). A reply that
may have been lost after the request reached FIS is recorded as unknown and re-read by listing the
template's experiments for the one tagged with this drill's id; none found, the command stops
there and starts nothing again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.drill_marker import running_tasks
from fleet_remediation.contract.budgets import AwsCallBudget
from fleet_remediation.contract.drills import DrillFault, DrillMarker
from fleet_remediation.core.errors import reached_service
from fleet_remediation.domain.drill_steps import DrillRun, DrillTarget, choose_task
from livekit_fleet_remediation.cli.audit_sources import Progress
from livekit_fleet_remediation.cli.common import CommandFailed
from livekit_fleet_remediation.cli.drill_fis import check_fis
from livekit_fleet_remediation.drill_config import (
    EXPERIMENT_DRILL_TAG,
    TEMPLATE_ENVIRONMENT_TAG,
    TEMPLATE_FAULT_TAG,
    TEMPLATE_SERVICE_TAG,
)

# A create call: one attempt, so no retry can start a second experiment.
FIS_START = AwsCallBudget("fis", connect_timeout_seconds=1.0, read_timeout_seconds=5.0, attempts=1)
FIS_READ = AwsCallBudget("fis", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=3)
IAM_READ = AwsCallBudget("iam", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=2)
ENDED = frozenset({"completed", "stopped", "failed", "cancelled"})
# FIS resolves the target while the experiment initiates: read it this many times, this far apart.
RESOLVE_READS, RESOLVE_WAIT_SECONDS = 6, 5.0


@dataclass(frozen=True)
class FisClients:
    start: Any
    read: Any
    iam: Any

    @classmethod
    def budgeted(cls, region: str) -> FisClients:
        return cls(
            aws_client(FIS_START, region_name=region),
            aws_client(FIS_READ, region_name=region),
            aws_client(IAM_READ, region_name=region),
        )


@dataclass(frozen=True)
class FisRequest:
    env: str
    service: str
    cluster: str
    ecs_service: str
    fault: DrillFault
    minutes: float
    mode: str
    drill_id: str


@dataclass
class FisDrill:
    clients: FisClients
    ecs: Any
    progress: Progress
    sleep: Callable[[float], None]
    clock: Callable[[], datetime]

    def run(self, request: FisRequest, watch: Callable[[DrillRun], None]) -> DrillRun:
        missing = check_fis(self.ecs, self.clients.iam, request.cluster, request.ecs_service, request.fault)
        for item in missing:
            print(f"missing for AWS FIS: {item}", file=sys.stderr)
        if missing:
            raise CommandFailed("FisNotReady", f"{len(missing)} AWS FIS prerequisite(s) missing (above)")
        choose_task(self._tasks(request), None, request.service)
        template_id = self.template(request)
        for experiment in self.experiments(template_id):
            if experiment["state"]["status"] not in ENDED:
                raise CommandFailed("DrillRunning", f"AWS FIS experiment {experiment['id']} is still active")
        started = self.clock()
        experiment_id = self.start(template_id, request.drill_id)
        try:
            task_arn = self.resolve(experiment_id)
            choose_task(self._tasks(request), task_arn, request.service)
            until = int((started + timedelta(minutes=request.minutes)).timestamp())
            marker = DrillMarker(request.fault, until, request.drill_id)
            run = DrillRun(
                request.fault, DrillTarget(request.cluster, task_arn), marker, started, request.mode
            )
            run.experiment_id = experiment_id
            self.progress.write(f"drill {request.drill_id}: AWS FIS experiment {experiment_id} on {task_arn}")
            watch(run)
        finally:
            stopped = self.stop(experiment_id)
        run.marker_removed = stopped
        return run

    def _tasks(self, request: FisRequest) -> list[dict[str, Any]]:
        return running_tasks(self.ecs, request.cluster, request.ecs_service)

    def template(self, request: FisRequest) -> str:
        wanted = {
            TEMPLATE_ENVIRONMENT_TAG: request.env,
            TEMPLATE_SERVICE_TAG: request.service,
            TEMPLATE_FAULT_TAG: request.fault.value,
        }
        for template in _pages(self.clients.read.list_experiment_templates, "experimentTemplates"):
            if all(template.get("tags", {}).get(key) == value for key, value in wanted.items()):
                return str(template["id"])
        raise CommandFailed(
            "NoTemplate",
            f"no AWS FIS experiment template for {request.fault.value} in {request.env}/{request.service}: "
            "set drills.fis in its configuration and deploy",
        )

    def experiments(self, template_id: str) -> Iterator[dict[str, Any]]:
        yield from _pages(self.clients.read.list_experiments, "experiments", experimentTemplateId=template_id)

    def start(self, template_id: str, drill_id: str) -> str:
        try:
            answer = self.clients.start.start_experiment(
                experimentTemplateId=template_id, tags={EXPERIMENT_DRILL_TAG: drill_id}
            )
            return str(answer["experiment"]["id"])
        except (ClientError, BotoCoreError) as exc:
            if not reached_service(exc):
                raise CommandFailed(
                    "DrillNotStarted", f"AWS FIS did not start the experiment: {exc}"
                ) from exc
            self.progress.write(
                f"drill {drill_id}: StartExperiment's reply was lost ({exc}): outcome unknown"
            )
        for experiment in self.experiments(template_id):
            if experiment.get("tags", {}).get(EXPERIMENT_DRILL_TAG) == drill_id:
                self.progress.write(f"drill {drill_id}: found its experiment {experiment['id']}")
                return str(experiment["id"])
        raise CommandFailed(
            "DrillStartUnknown",
            f"StartExperiment's reply was lost and no experiment of template {template_id} carries drill "
            f"id {drill_id}; a create call is not repeated: look with aws fis list-experiments",
        )

    def resolve(self, experiment_id: str) -> str:
        """The task FIS chose for the experiment; an experiment that ended before it is refused."""
        for read in range(RESOLVE_READS):
            state = self.clients.read.get_experiment(id=experiment_id)["experiment"]["state"]
            if state["status"] in ENDED:
                raise CommandFailed(
                    "DrillNotStarted",
                    f"AWS FIS experiment {experiment_id} {state['status']}: {state.get('reason', '')}",
                )
            targets = self.clients.read.list_experiment_resolved_targets(experimentId=experiment_id)
            for target in targets.get("resolvedTargets", []):
                arns = [v for v in target.get("targetInformation", {}).values() if ":task/" in v]
                if target.get("resourceType") == "aws:ecs:task" and arns:
                    return str(arns[0])
            if read < RESOLVE_READS - 1:
                self.sleep(RESOLVE_WAIT_SECONDS)
        raise CommandFailed("DrillNotStarted", f"AWS FIS experiment {experiment_id} resolved no task")

    def stop(self, experiment_id: str) -> bool:
        """True when the experiment is stopping or had already ended."""
        try:
            self.clients.read.stop_experiment(id=experiment_id)
            return True
        except (ClientError, BotoCoreError) as exc:
            try:
                status = self.clients.read.get_experiment(id=experiment_id)["experiment"]["state"]["status"]
            except (ClientError, BotoCoreError):
                status = "unknown"
            if status in ENDED:
                return True
            self.progress.write(
                f"drill: could not stop AWS FIS experiment {experiment_id} ({exc}); it ends at its "
                f"template's duration, or: aws fis stop-experiment --id {experiment_id}"
            )
            return False


def _pages(call: Callable[..., dict[str, Any]], key: str, **params: Any) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        page = call(**params, **({"nextToken": token} if token else {}))
        yield from page.get(key, [])
        token = page.get("nextToken")
        if not token:
            return
