"""The chat buttons of a drainer message: each undo the message offers in chat gets a fresh token,
recorded in the ledger (task, agent service, action, incident, expiry) before the message goes, so
the chat entry point can do exactly that and nothing else. A token that cannot be recorded leaves
its button off the message; the e-mail's command still says how to undo."""

from __future__ import annotations

from fleet_remediation.core import messages
from fleet_remediation.core.chat_actions import TOKEN_CONTEXT, TOKEN_LIFETIME_SECONDS, new_token
from fleet_remediation.core.errors import RemediationError
from worker_drainer.adapters.chat_tokens import ChatToken
from worker_drainer.dependencies import DrainerDependencies


def with_chat_buttons(
    note: messages.Notification, deps: DrainerDependencies
) -> tuple[messages.Notification, str | None]:
    """``note`` with a recorded token on the first undo of each kind (what chat shows), and why a
    button was left off, if one was."""
    store = deps.chat_tokens
    if store is None:
        return note, None
    left_off: str | None = None
    expires_at = int(deps.clock().timestamp()) + TOKEN_LIFETIME_SECONDS
    shown: set[str] = set()
    undos: list[messages.Undo] = []
    for undo in note.undo:
        request = undo.chat
        if request is None or request.action in shown or request.agent_service != deps.settings.agent_service:
            undos.append(undo)
            continue
        token = ChatToken(
            new_token(), request.action, request.task_id, request.agent_service, note.incident_id, expires_at
        )
        try:
            store.issue(token)
        except RemediationError as exc:
            left_off = f"left off: {exc.code}: {exc}"
            undos.append(undo)
            continue
        shown.add(request.action)
        undos.append(undo.model_copy(update={"button": {TOKEN_CONTEXT[request.action]: token.token}}))
    return note.model_copy(update={"undo": undos}), left_off
