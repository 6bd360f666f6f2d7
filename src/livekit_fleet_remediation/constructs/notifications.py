"""Where the on-call person hears from the stack.

* The **notification topic** (new and KMS-encrypted, or an existing one from
  ``notifications.topic_arn``) carries readable text: e-mail subscribers read it as is.
* The **chat topic** (``notifications.chat``; new, or an existing one already mapped to a channel)
  carries the same messages as Amazon Q Developer custom-notification JSON. A second topic rather
  than SNS message structure: Amazon Q subscribes over HTTPS, and a per-protocol message would also
  hand the chat JSON to every other HTTPS subscriber (a pager webhook, say).
* **Every alarm** (detection and self-monitoring) publishes its ALARM and OK transitions to both
  topics: CloudWatch's own notification goes out even when a function is broken, and Amazon Q
  renders CloudWatch alarms natively.
* **Pages without duplicates**: a pager (``notifications.pagers``) is subscribed with the filter
  policy ``{"notification_kind": [{"exists": false}]}``. The functions stamp every message with
  ``notification_kind``; CloudWatch's alarm notifications carry no attributes. So a pager gets one
  page per alarm transition and none of the functions' follow-ups, while e-mail and chat get both
  (in chat, threaded by incident id).
* **One tap to stop** (``chat_actions``): a Slack channel the stack creates gets the custom actions
  the messages' buttons run, and a guardrail and a role that allow invoking the environment's chat
  entry point and nothing else (it can only undrain, drain by a recorded token, or switch off).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import ArnFormat, CfnOutput
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from fleet_remediation.contract.naming import NOTIFICATION_KIND_ATTRIBUTE, PRODUCT_PREFIX
from livekit_fleet_remediation.config import ChatNotifications, EnvironmentConfig
from livekit_fleet_remediation.constructs.chat_actions import ChatActions
from livekit_fleet_remediation.constructs.stack_key import StackKey, from_our


class Notifications(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        key: StackKey,
        topic: sns.ITopic | None = None,
    ) -> None:
        """``topic``: an existing topic by reference (the construct's prop), before ``topic_arn``."""
        super().__init__(scope, construct_id)
        targets = config.notifications
        self._key = key
        if topic is not None:
            self.topic: sns.ITopic = topic
        elif targets.topic_arn:
            self.topic = sns.Topic.from_topic_arn(self, "ExistingTopic", targets.topic_arn)
        else:
            self.topic = self._new_topic("Topic", f"LiveKit Fleet Remediation ({env_name})", env_name)
        for address in targets.emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        no_function_messages = {
            NOTIFICATION_KIND_ATTRIBUTE: sns.SubscriptionFilter(conditions=[{"exists": False}])
        }
        for index, pager in enumerate(targets.pagers):
            sns.Subscription(
                self,
                f"Pager{index}",
                topic=self.topic,
                protocol=sns.SubscriptionProtocol(pager.protocol.upper()),
                endpoint=pager.endpoint,
                filter_policy=no_function_messages,
            )
        self.chat_topic: sns.ITopic | None = None
        self.chat_actions: ChatActions | None = None
        if targets.chat is not None:
            self._chat(targets.chat, env_name)
        CfnOutput(self, "TopicArn", value=self.topic.topic_arn)

    def _chat(self, chat: ChatNotifications, env_name: str) -> None:
        if chat.topic_arn:
            self.chat_topic = sns.Topic.from_topic_arn(self, "ExistingChatTopic", chat.topic_arn)
        else:
            self.chat_topic = self._new_topic(
                "ChatTopic", f"LiveKit Fleet Remediation chat ({env_name})", env_name
            )
        if chat.slack is not None:
            # The channel runs the messages' buttons and nothing else.
            actions = self.chat_actions = ChatActions(self, "ChatActions", env_name=env_name)
            self.slack = chatbot.SlackChannelConfiguration(
                self,
                "Slack",
                slack_channel_configuration_name=f"{PRODUCT_PREFIX}-{env_name}",
                slack_workspace_id=chat.slack.workspace_id,
                slack_channel_id=chat.slack.channel_id,
                notification_topics=[self.chat_topic],
                role=actions.role,
                guardrail_policies=[actions.policy],
            )
            channel = cast(chatbot.CfnSlackChannelConfiguration, self.slack.node.default_child)
            channel.customization_resource_arns = [
                action.attr_custom_action_arn for action in actions.actions
            ]
        CfnOutput(self, "ChatTopicArn", value=self.chat_topic.topic_arn)

    def _new_topic(self, construct_id: str, display_name: str, env_name: str) -> sns.Topic:
        # CloudWatch alarms publish to the topics, so they must be able to use the key.
        self._key.allow_alarms()
        topic = sns.Topic(
            self, construct_id, display_name=display_name, master_key=self._key.key, enforce_ssl=True
        )
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=[topic.topic_arn],
                conditions=self._from_our_alarms(),
            )
        )
        return topic

    def _from_our_alarms(self) -> dict[str, dict[str, str]]:
        return from_our(self, "cloudwatch", "alarm", ArnFormat.COLON_RESOURCE_NAME)

    @property
    def topics(self) -> list[sns.ITopic]:
        return [self.topic] + ([self.chat_topic] if self.chat_topic is not None else [])

    def grant_publish(self, grantee: iam.IGrantable) -> None:
        for topic in self.topics:
            topic.grant_publish(grantee)

    def notify_on_state_changes(self, alarm: cloudwatch.AlarmBase) -> None:
        """ALARM and OK of ``alarm`` to every topic."""
        for topic in self.topics:
            action = cw_actions.SnsAction(topic)
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
