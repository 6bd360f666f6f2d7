"""What the drainer tells people: one message per invocation, composed here (self-contained, so a
shared renderer can replace it), published through the notifier.

The message says what happened (or, in a dry run, what WOULD have happened — the same message,
marked), why (the decision's evidence), honest counts (done, failed, unknown, refused, errors:
never "done" when something failed or is unknown), how to undo it, and links. Conditions that
persist across ticks (a refusal, a dry-run step, an error) are told once per ``NOTICE_REPEAT``;
what was done is always told.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from fleet_remediation.contract.naming import FunctionName, lambda_function_name
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import Mode, Outcome, ReportBuilder
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.plan_model import LadderPlan, PlannedStep, Snapshot, Step
from worker_drainer.validation import ServiceIdentity

NOTICE_REPEAT = timedelta(hours=1)
SECTIONS = {
    "would": "Would have (dry run: nothing was changed)",
    "done": "Done",
    "failed": "Failed",
    "unknown": "Unknown outcome (reply lost or interrupted; the next tick re-reads the task)",
    "refused": "Refused or skipped (an operator should know)",
    "error": "Errors (what could not be read or done)",
    "fleet": "Fleet",
}
# What each error leaves unknown, so a partial run never reads as a clean one.
CONSEQUENCES = {
    "LiveKitUnavailable": "rooms unknown: nothing reaped; no stop on log evidence",
    "LiveKitApiError": "rooms unknown: nothing reaped; no stop on log evidence",
    "DeadlineExceeded": "evidence or steps left for the next tick",
    "ResultTruncated": "job sightings incomplete: no stop on log evidence",
    "KillSwitchError": "the mode could not be read: ran as a dry run",
    "UntrustedEvent": "the event was refused: nothing was read or changed for it",
    "CapacityAmbiguous": "the service's desired count needs a look",
}


@dataclass(frozen=True)
class Line:
    section: str
    text: str
    # A once-key: told at most once per NOTICE_REPEAT. None: always told.
    key: str | None = None


def _undo_command(settings_env: str, action: str, task_id: str) -> str:
    payload = json.dumps({"action": action, "task": task_id, "dry_run": False}, separators=(",", ":"))
    function = lambda_function_name(settings_env, FunctionName.WORKER_DRAINER)
    return (
        f"aws lambda invoke --function-name {function} --cli-binary-format raw-in-base64-out "
        f"--payload '{payload}' /dev/stdout"
    )


def _task_link(identity: ServiceIdentity, task_id: str) -> str | None:
    if identity.region is None:
        return None
    region = identity.region
    return (
        f"https://{region}.console.aws.amazon.com/ecs/v2/clusters/{identity.cluster}/tasks/"
        f"{task_id}/configuration?region={region}"
    )


def _details(
    step: PlannedStep | None, task_id: str, env: str, identity: ServiceIdentity, done: bool = True
) -> list[str]:
    """Why, how to undo what was done (nothing to undo in a dry run), and the task's console page."""
    lines = [f"why: {step.reason}"] if step is not None else []
    if done and step is not None and step.step in (Step.CORDON, Step.REAP, Step.COMPLETE_CORDON):
        lines.append(f"undo: {_undo_command(env, 'undrain', task_id)}")
    link = _task_link(identity, task_id)
    return lines + ([f"task: {link}"] if link else [])


def message_lines(
    report: ReportBuilder, plan: LadderPlan, snapshot: Snapshot | None, env: str, identity: ServiceIdentity
) -> list[Line]:
    planned = {(s.task_id, s.step.value): s for s in plan.steps}
    sections = {Outcome.DONE: "done", Outcome.FAILED: "failed", Outcome.UNKNOWN: "unknown"}
    lines: list[Line] = []
    for action in report.actions:
        step = planned.get((action.resource, action.action))
        code = f" [{action.error.code}]" if action.error else ""
        head = f"{action.action} {action.resource}: {action.reason}{code}"
        section = sections.get(action.outcome)
        if section is not None:
            lines.append(
                Line(section, "\n    ".join([head, *_details(step, action.resource, env, identity)]))
            )
        elif action.outcome is Outcome.SKIPPED:
            lines.append(Line("refused", head, f"{action.resource}#{action.action}#skipped"))
    if report.mode is Mode.DRY_RUN:
        for step in plan.acting():
            text = "\n    ".join(
                [
                    f"{step.step.value} {step.task_id}",
                    *_details(step, step.task_id, env, identity, done=False),
                ]
            )
            lines.append(Line("would", text, f"dry-run#{step.task_id}#{step.step.value}"))
    for step in plan.steps:
        if step.notify:
            kind = " ".join(step.reason.split()[:2])
            lines.append(Line("refused", f"{step.task_id}: {step.reason}", f"{step.task_id}#{kind}"))
    for error in report.errors:
        consequence = CONSEQUENCES.get(error.code)
        text = f"{error.code}: {error.message}" + (f" — {consequence}" if consequence else "")
        lines.append(Line("error", text, f"error#{error.code}#{error.resource or ''}"))
    fleet = snapshot.fleet if snapshot else None
    if fleet is not None and fleet.fleet_wide and snapshot is not None and snapshot.start_new:
        slow = "; ".join(f"{w.task_id}: {w.reason}" for w in fleet.workers if w.pattern.elevated)
        text = f"fleet-wide slow inference, nothing drained: {fleet.reason}. Suspect shared causes "
        lines.append(
            Line("fleet", text + f"(host contention, CPU credits, a provider outage). {slow}", "fleet")
        )
    return lines


def compose(lines: list[Line], report: ReportBuilder, env: str, runbook: str) -> tuple[str, str]:
    counts = {name: sum(line.section == name for line in lines) for name in SECTIONS}
    dry = report.mode is Mode.DRY_RUN
    tally = ", ".join(f"{n} {name}" for name, n in counts.items() if n and name != "would")
    if dry:
        first = next((line.text.split("\n")[0] for line in lines if line.section == "would"), None)
        subject = f"[{env}] DRY RUN — worker drainer would have: {first or tally or 'nothing'}"
    else:
        subject = f"[{env}] worker drainer {report.status()}: {tally or 'nothing to report'}"
    body = [subject, ""]
    if dry:
        body += ["DRY RUN — would have … (the kill switch or the invoke said dry-run; nothing changed)", ""]
    trigger = report.trigger
    source = f"{trigger.kind.value} {trigger.source or ''}".strip() if trigger else "?"
    body.append(
        f"Status: {report.status()}   Mode: {report.mode.value if report.mode else '?'}   "
        f"Trigger: {source}   Invocation: {report.invocation_id}"
    )
    for name, title in SECTIONS.items():
        found = [line.text for line in lines if line.section == name]
        if found:
            body += ["", f"{title} ({len(found)}):", *(f"  - {text}" for text in found)]
    body += ["", f"Runbook: {runbook}"]
    return subject, "\n".join(body)


def notify(
    report: ReportBuilder,
    plan: LadderPlan,
    snapshot: Snapshot | None,
    deps: DrainerDependencies,
    identity: ServiceIdentity,
) -> None:
    """Publish one message if anything is worth telling; a publish failure is a report error."""
    settings = deps.settings
    env = settings.environment_name
    lines = [
        line for line in message_lines(report, plan, snapshot, env, identity) if _new(line, deps, report)
    ]
    if not lines:
        return
    subject, message = compose(lines, report, env, settings.runbook(FunctionName.WORKER_DRAINER))
    attributes = {"environment": env, "mode": report.mode.value if report.mode else "unknown"}
    try:
        report.notifications.append(deps.notifier.publish(subject, message, attributes))
    except RemediationError as exc:
        report.error(exc)


def _new(line: Line, deps: DrainerDependencies, report: ReportBuilder) -> bool:
    if line.key is None:
        return True
    mode = report.mode.value if report.mode else "unknown"
    try:
        ttl = int(NOTICE_REPEAT.total_seconds())
        return deps.ledger.first_notice(f"{mode}#{line.key}", deps.clock(), ttl)
    except RemediationError:
        return True  # better told twice than not at all
