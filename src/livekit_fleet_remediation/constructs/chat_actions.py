"""One tap in chat: the Amazon Q Developer custom actions on the functions' messages, the chat
channel's guardrail and role, and the chat entry point they invoke.

The channel can stop, never start. Lambda does not tell a function who invoked it, and channel
members can type any command the role allows, so the role and the guardrail allow exactly
``lambda:InvokeFunction`` on one function, the environment's chat entry point
(``worker_drainer.chat_entry``, deployed from the drainer's code as ``lkfr-<env>-chat``), which
accepts only an undrain or a drain by a token the drainer recorded, or an ``off`` switch
(docs/decisions/0014-chat-entry-point.md). The actions' names, commands and attachments come from
``core.chat_actions``, the module the messages fill their ``additionalContext`` from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE
from fleet_remediation.contract.budgets import (
    ANNOUNCE_SECONDS,
    CHAT_FORWARD,
    LEDGER_CALL,
    REPORT_MARGIN_SECONDS,
    SWITCH_OFF_WRITE,
)
from fleet_remediation.contract.naming import EVENT_BUS_NAME, EVENT_SOURCE, METRICS_NAMESPACE, FunctionName
from fleet_remediation.core import chat_actions
from livekit_fleet_remediation.assets import asset_roots
from livekit_fleet_remediation.constructs.function_parts import function_code, log_retention
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.shared_layers import RUNTIME, SharedLayers, acknowledge_runtime
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.nag import acknowledge
from worker_drainer.adapters.chat_tokens import CHAT_TOKEN_READ_ACTIONS, TOKEN_PARTITION_PREFIX
from worker_drainer.chat_entry import CHAT_ENTRY, SETTINGS_VARIABLE

DRAINER_DIR = FunctionName.WORKER_DRAINER.value


def chat_entry_seconds(services: int) -> int:
    """The entry point's timeout: a token read per service, the claim, the forward, the action
    events and the report, each within its own budget."""
    reads = (services + 1) * LEDGER_CALL.worst_case_seconds
    calls = reads + max(CHAT_FORWARD.worst_case_seconds, SWITCH_OFF_WRITE.worst_case_seconds)
    return math.ceil(calls + ANNOUNCE_SECONDS + REPORT_MARGIN_SECONDS)


@dataclass(frozen=True)
class ChatService:
    """What the entry point needs of one agent service: its ledger and its drainer."""

    ledger: dynamodb.ITable
    drainer: lambda_.IFunction


class ChatActions(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env_name: str) -> None:
        super().__init__(scope, construct_id)
        self.env_name = env_name
        stack = Stack.of(self)
        self.entry_point_arn = stack.format_arn(
            service="lambda",
            resource="function",
            resource_name=chat_actions.chat_entry_function_name(env_name),
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.actions = [
            self._custom_action(action, env_name)
            for action in chat_actions.chat_actions(env_name, stack.region)
        ]
        self.policy = iam.ManagedPolicy(
            self,
            "Guardrail",
            description=f"Amazon Q Developer chat ({env_name}): invoke the chat entry point, nothing else",
            statements=[self.invoke_entry_point()],
        )
        # No aws:SourceAccount condition: AWS does not document that the chat service sends it, and a
        # condition on a key that is not sent would break the channel.
        self.role = iam.Role(
            self,
            "ChannelRole",
            assumed_by=iam.ServicePrincipal("chatbot.amazonaws.com"),
            description=f"Runs the one-tap buttons of {env_name}'s messages: the chat entry point only",
            managed_policies=[self.policy],
        )

    def invoke_entry_point(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.entry_point_arn])

    def add_entry_point(
        self,
        *,
        layers: SharedLayers,
        key: StackKey,
        kill_switch: KillSwitch,
        services: Mapping[str, ChatService],
        log_retention_days: int,
    ) -> lambda_.Function:
        """The chat entry point, once the agent services' drainers and ledgers exist."""
        entry = ChatEntryPoint(
            self,
            "EntryPoint",
            env_name=self.env_name,
            layers=layers,
            key=key,
            kill_switch=kill_switch,
            services=services,
            log_retention_days=log_retention_days,
        )
        return entry.function

    def _custom_action(self, action: chat_actions.ChatAction, env_name: str) -> chatbot.CfnCustomAction:
        attachment = chatbot.CfnCustomAction.CustomActionAttachmentProperty(
            button_text=action.button_text,
            notification_type=chat_actions.NOTIFICATION_TYPE,
            variables=action.variables,
            criteria=[
                chatbot.CfnCustomAction.CustomActionAttachmentCriteriaProperty(
                    variable_name=variable, operator=operator, value=value
                )
                for variable, operator, value in action.criteria
            ],
        )
        return chatbot.CfnCustomAction(
            self,
            f"Action-{action.key}",
            action_name=chat_actions.action_name(env_name, action.key),
            definition=chatbot.CfnCustomAction.CustomActionDefinitionProperty(command_text=action.command),
            attachments=[attachment],
        )


class ChatEntryPoint(Construct):
    """``lkfr-<env>-chat``: the drainer's code with the chat handler, its own log group and a role
    that reads and claims tokens (``chat#`` items of the services' ledgers), invokes the services'
    drainers, writes the functions' own switches (the code writes only ``off``) and puts action events."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        layers: SharedLayers,
        key: StackKey,
        kill_switch: KillSwitch,
        services: Mapping[str, ChatService],
        log_retention_days: int,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        name = chat_actions.chat_entry_function_name(env_name)
        self.log_group = self._log_group(key, name, log_retention_days)
        self.role = self._role(name)
        switches = {function: kill_switch.function_parameter_name(function) for function in FunctionName}
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=name,
            description="The chat channel's one entry point: undrain or drain by button token, or switch off",
            runtime=RUNTIME,
            architecture=layers.architecture,
            handler=f"{DRAINER_DIR}.chat_handler.lambda_handler",
            code=function_code(asset_roots().functions, DRAINER_DIR),
            layers=layers.all,
            role=self.role,
            timeout=Duration.seconds(chat_entry_seconds(len(services))),
            memory_size=256,
            # Presses are rare; two at once is plenty, and a flood cannot fan out.
            reserved_concurrent_executions=2,
            # Traced like the other functions: the shared handler's tracer expects Lambda's segment.
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment={
                "POWERTOOLS_SERVICE_NAME": CHAT_ENTRY,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                "ENVIRONMENT_NAME": env_name,
                SETTINGS_VARIABLE: stack.to_json_string(_settings(env_name, services, switches)),
            },
        )
        for statement in self._statements(stack, services, list(switches.values())):
            self.role.add_to_policy(statement)
        _suppress_trace_wildcard(self.role)
        acknowledge_runtime(self.function)

    def _role(self, name: str) -> iam.Role:
        return iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{name}: read and claim button tokens, forward to the drainers, switch off",
        )

    def _log_group(self, key: StackKey, name: str, retention_days: int) -> logs.LogGroup:
        log_group_name = f"/aws/lambda/{name}"
        key.allow_log_group("ChatEntryLogs", log_group_name)
        return logs.LogGroup(
            self,
            "Logs",
            log_group_name=log_group_name,
            retention=log_retention(retention_days),
            encryption_key=key.key,
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _statements(
        self, stack: Stack, services: Mapping[str, ChatService], switches: Sequence[str]
    ) -> list[iam.PolicyStatement]:
        bus = stack.format_arn(service="events", resource="event-bus", resource_name=EVENT_BUS_NAME)
        parameters = [
            stack.format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
            for name in switches
        ]
        return [
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            ),
            iam.PolicyStatement(
                actions=list(CHAT_TOKEN_READ_ACTIONS),
                resources=[parts.ledger.table_arn for parts in services.values()],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{TOKEN_PARTITION_PREFIX}*"]}
                },
            ),
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[parts.drainer.function_arn for parts in services.values()],
            ),
            iam.PolicyStatement(actions=["ssm:PutParameter"], resources=parameters),
            iam.PolicyStatement(
                actions=["events:PutEvents"],
                resources=[bus],
                conditions={
                    "StringEquals": {
                        "events:source": EVENT_SOURCE,
                        "events:detail-type": ACTION_EVENT_DETAIL_TYPE,
                    }
                },
            ),
        ]


def _settings(
    env_name: str, services: Mapping[str, ChatService], switches: Mapping[FunctionName, str]
) -> dict[str, object]:
    """``worker_drainer.chat_entry.ChatEntrySettings``, as the function reads it at cold start."""
    return {
        "environment_name": env_name,
        "services": {
            service: {
                "ledger_table_name": parts.ledger.table_name,
                "drainer_function_name": parts.drainer.function_name,
            }
            for service, parts in services.items()
        },
        "switches": {function.value: parameter for function, parameter in switches.items()},
    }


def _suppress_trace_wildcard(role: iam.Role) -> None:
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "X-Ray PutTraceSegments/PutTelemetryRecords take no resource-level permissions.",
        ["Resource::*"],
        apply_to_children=True,
    )
