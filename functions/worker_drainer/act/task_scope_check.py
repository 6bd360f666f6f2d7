"""Whether the drainer's IAM policy lets it change the service's tasks, checked before it acts.

With ``drainer.task_action_scope = service`` (the default) the stack allows StopTask,
UpdateTaskProtection, TagResource and UntagResource only on tasks tagged ``aws:ecs:serviceName`` =
our service. ECS puts that tag on a service's tasks only when the service has ECS managed tags on
(``enableECSManagedTags``); without it every one of those calls would end in AccessDenied, one step
at a time. So the drainer reads the setting once (DescribeServices) before its first task step and,
when it is off, refuses the task steps with one typed error that names the fix.
"""

from __future__ import annotations

# Steps with task actions in the step table: tag, untag, (un)protect or stop a task.
from fleet_remediation.contract.drainer_steps import TASK_STEPS as TASK_STEPS
from fleet_remediation.contract.naming import ECS_SERVICE_NAME_TAG
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.core.errors import ConfigurationError, RemediationError
from worker_drainer.adapters.ecs_tasks import EcsTaskService


class EcsManagedTagsOffError(ConfigurationError):
    """The IAM policy is scoped by the ECS managed service tag, and the service does not set it."""

    code = "EcsManagedTagsOff"


def task_scope_refusal(
    ecs: EcsTaskService, scope: TaskActionScope, cluster: str, service: str
) -> RemediationError | None:
    """Why the task steps must not run this time (None: they may). An unreadable service setting
    refuses them too: the next tick reads it again."""
    if scope is TaskActionScope.CLUSTER:
        return None
    try:
        if ecs.ecs_managed_tags():
            return None
    except RemediationError as exc:
        return exc
    return EcsManagedTagsOffError(
        f"ECS service {service} has ECS managed tags off, so its tasks carry no {ECS_SERVICE_NAME_TAG} "
        "tag and the drainer's IAM policy (drainer.task_action_scope = service) denies every task change. "
        f"Turn them on (aws ecs update-service --cluster {cluster} --service {service} "
        "--enable-ecs-managed-tags --force-new-deployment: tasks started before keep no tag) or set "
        "drainer.task_action_scope to cluster",
        resource=service,
    )
