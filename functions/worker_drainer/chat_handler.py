"""Lambda entry point of the environment's chat entry point (``chat_entry``), deployed from the
drainer's code as its own function (``lkfr-<env>-chat``)."""

from fleet_remediation.core.handler import lambda_handler_for
from worker_drainer.chat_entry import CHAT_ENTRY, ChatEntry, ChatEntryDependencies

lambda_handler = lambda_handler_for(CHAT_ENTRY, ChatEntry(), ChatEntryDependencies.from_environment)
