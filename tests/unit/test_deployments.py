"""Whether an agent service deploys (``adapters.deployments``, the reaper's hold): a rolling update
is two deployments or more, named by its PRIMARY one (else the first listed); one deployment, or a
service described without any, is no deployment; every listed service is read, the second as well as
the first; an unreadable answer raises, naming the call and the service."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from fleet_remediation.adapters.deployments import EcsDeploymentWatch, deploying
from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.budgets import DEPLOYMENT_READ
from fleet_remediation.core.errors import AwsApiError

ACTIVE = {"id": "ecs-svc/1", "status": "ACTIVE"}
PRIMARY = {"id": "ecs-svc/2", "status": "PRIMARY"}


def test_a_rolling_update_is_named_by_its_primary_deployment_wherever_it_is_listed() -> None:
    for deployments in ([ACTIVE, PRIMARY], [PRIMARY, ACTIVE]):
        assert deploying({"serviceName": "agents", "deployments": deployments}) == (
            "a deployment of agents is in progress (ecs-svc/2)"
        )


def test_without_a_primary_deployment_the_first_listed_names_it() -> None:
    second = {"id": "ecs-svc/3", "status": "ACTIVE"}
    assert deploying({"serviceName": "agents", "deployments": [ACTIVE, second]}) == (
        "a deployment of agents is in progress (ecs-svc/1)"
    )


def test_a_service_described_without_its_name_is_the_agent_service() -> None:
    assert deploying({"deployments": [ACTIVE, PRIMARY]}) == (
        "a deployment of the agent service is in progress (ecs-svc/2)"
    )


@pytest.mark.parametrize(
    "service", [{"deployments": [PRIMARY]}, {"deployments": []}, {}], ids=["one", "none", "no-key"]
)
def test_one_deployment_or_none_is_no_deployment(service: dict[str, Any]) -> None:
    assert deploying(service) is None


class Ecs:
    """DescribeServices per service name: a reply, or a ClientError to raise."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies
        self.asked: list[tuple[str, list[str]]] = []

    def describe_services(self, cluster: str, services: list[str]) -> Any:
        self.asked.append((cluster, services))
        reply = self.replies[services[0]]
        if isinstance(reply, Exception):
            raise reply
        return reply


def _services(*names: str) -> list[AgentService]:
    return [AgentService(name=n, ecs_cluster=f"{n}-c", ecs_service=n, agent_log_group=f"/{n}") for n in names]


def test_the_second_listed_service_deploying_holds() -> None:
    ecs = Ecs(
        {
            "agents": {"services": [{"serviceName": "agents", "deployments": [PRIMARY]}]},
            "outbound": {"services": [{"serviceName": "outbound", "deployments": [ACTIVE, PRIMARY]}]},
        }
    )
    watch = EcsDeploymentWatch(_services("agents", "outbound"), client=ecs)
    assert watch.in_progress() == "a deployment of outbound is in progress (ecs-svc/2)"
    assert ecs.asked == [("agents-c", ["agents"]), ("outbound-c", ["outbound"])]


def test_a_reply_without_services_is_no_deployment() -> None:
    assert EcsDeploymentWatch(_services("agents"), client=Ecs({"agents": {}})).in_progress() is None


def test_an_unreadable_answer_raises_naming_the_call_and_the_service() -> None:
    refused = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeServices")
    watch = EcsDeploymentWatch(_services("agents"), client=Ecs({"agents": refused}))
    with pytest.raises(AwsApiError) as raised:
        watch.in_progress()
    assert raised.value.message == "ECS DescribeServices failed: AccessDeniedException: no"
    assert raised.value.resource == "agents"


def test_the_production_client_makes_one_attempt_within_the_deployment_reads_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    config = EcsDeploymentWatch(_services("agents"))._client.meta.config
    assert config.retries["total_max_attempts"] == DEPLOYMENT_READ.attempts == 1
    assert (config.connect_timeout, config.read_timeout) == (
        DEPLOYMENT_READ.connect_timeout_seconds,
        DEPLOYMENT_READ.read_timeout_seconds,
    )
