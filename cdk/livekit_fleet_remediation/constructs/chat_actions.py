"""One tap in chat: the Amazon Q Developer custom actions on the functions' messages (undrain a
task, drain it again, turn a function's own switch off), and the chat channel's guardrail and role,
which allow exactly those commands and nothing else.

The actions' names, commands and attachments come from ``core.chat_actions``, the same module the
messages fill their ``additionalContext`` from; each action is named after its environment and
attached only to that environment's custom notifications.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from constructs import Construct

from fleet_remediation.contract.naming import FunctionName, function_mode_parameter_name, lambda_function_name
from fleet_remediation.core import chat_actions


class ChatActions(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, env_name: str, services: Sequence[str]
    ) -> None:
        """``services``: the agent services whose drainers the buttons may invoke."""
        super().__init__(scope, construct_id)
        self.services = list(services)
        stack = Stack.of(self)
        self.actions = [
            self._custom_action(action, env_name)
            for action in chat_actions.chat_actions(env_name, stack.region)
        ]
        self.policy = iam.ManagedPolicy(
            self,
            "Guardrail",
            description=f"Amazon Q Developer chat ({env_name}): invoke the drainer, turn a function off",
            statements=self.statements(env_name),
        )
        self.role = iam.Role(
            self,
            "ChannelRole",
            assumed_by=iam.ServicePrincipal("chatbot.amazonaws.com"),
            description=f"Runs the one-tap undo buttons of {env_name}'s messages",
            managed_policies=[self.policy],
        )

    def statements(self, env_name: str) -> list[iam.PolicyStatement]:
        stack = Stack.of(self)
        drainers = [
            stack.format_arn(
                service="lambda",
                resource="function",
                resource_name=lambda_function_name(env_name, FunctionName.WORKER_DRAINER, service),
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for service in self.services
        ]
        switches = [
            stack.format_arn(
                service="ssm",
                resource="parameter",
                resource_name=function_mode_parameter_name(env_name, function).lstrip("/"),
            )
            for function in FunctionName
        ]
        return [
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=drainers),
            iam.PolicyStatement(actions=["ssm:PutParameter"], resources=switches),
        ]

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
