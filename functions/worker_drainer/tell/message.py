"""The drainer's message, in the shared model (``core.messages``), rendered to e-mail and chat like
the other functions': one ``Notification`` made of a run's lines (``message_lines``).

* headline: what was done to which task ("worker drainer cordoned task 2789d238"), or in a dry run what
  would have ("DRY RUN — would have cordoned task 2789d238"): steps first, then refusals, then
  fleet-wide slowness, then errors;
* why: the trigger and each step's evidence (the decision's reason);
* counts: the report's, with the plan's refusals counted as refused;
* undo: end a drain (``undrain``), drain again after an undo, keep the drainer off a task a dry run
  would have drained (the exclude tag), and this function's own kill switch;
* links: the runbook, the alarm behind the run, each task in the ECS console, the dashboard, and
  this run's report in Logs Insights;
* severity: critical for fleet-wide slowness (nothing the drainer can do), a warning when a worker
  is (or would be) taken out or a step is refused, else info; a partial or failed run escalates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.drainer_steps import MARKING, ROWS, TAKING_OUT, Step
from fleet_remediation.contract.naming import EXCLUDE_TAG, FunctionName
from fleet_remediation.contract.settings import DrainerSettings
from fleet_remediation.core import messages
from fleet_remediation.core.console_links import alarm_link, ecs_task_link
from fleet_remediation.core.report_model import Outcome, RunFacts, TriggerKind
from worker_drainer.decide.plan_model import PlannedStep
from worker_drainer.read.target_checks import ServiceIdentity
from worker_drainer.tell.message_lines import Line

FUNCTION = FunctionName.WORKER_DRAINER
HEADLINE_ITEMS = 2


@dataclass(frozen=True)
class MessageContext:
    settings: DrainerSettings
    identity: ServiceIdentity
    incident_id: str
    # The alarm behind the run (the VAD alarm, or the TTS-reach alarm of a suspect-worker event).
    alarm_name: str | None = None

    @property
    def region(self) -> str | None:
        return self.identity.region or self.settings.aws_region


def exclude_command(task_arn: str) -> str:
    region = task_arn.split(":")[3] if task_arn.count(":") >= 5 else ""
    option = f" --region {region}" if region else ""
    return f"aws ecs tag-resource{option} --resource-arn {task_arn} --tags key={EXCLUDE_TAG},value=true"


def _step(line: Line) -> Step | None:
    return Step(line.action) if line.action in ROWS else None


def _task(line: Line) -> str:
    return f"task {(line.task_id or '?')[:8]}"


def _done_form(line: Line) -> str:
    """How a step reads after "would have" (its row's done form), e.g. "cordoned task 2789d238"."""
    step = _step(line)
    return f"{ROWS[step].done_form if step else line.action} {_task(line)}"


def _acted_form(line: Line) -> str:
    """What was done to the task, in words: "cordoned task 2789d238", "stop of task 2789d238 failed"."""
    if line.outcome is Outcome.DONE:
        return _done_form(line)
    return f"{line.action} of task {(line.task_id or '?')[:8]} {line.outcome.value if line.outcome else ''}"


def _listing(items: list[str]) -> str:
    more = len(items) - HEADLINE_ITEMS
    return "; ".join(items[:HEADLINE_ITEMS]) + (f" (+{more} more)" if more > 0 else "")


def _steps_headline(acted: list[Line], would: list[Line]) -> tuple[str, str]:
    done = [_acted_form(line) for line in acted]
    forms = [_done_form(line) for line in acted + would]
    return f"worker drainer {_listing(done or forms)}", _listing(forms)


def _refused_headline(refused: list[Line]) -> tuple[str, str]:
    skipped = [f"skipped {_task(line)}: {line.step.reason if line.step else line.text}" for line in refused]
    return f"worker drainer {_listing(skipped)}", _listing(skipped)


def _quiet_headline(lines: list[Line]) -> tuple[str, str]:
    """Nothing done or refused: fleet-wide slowness, else the errors that stopped the run."""
    if any(line.section == "fleet" for line in lines):
        nothing = "drained nothing: slow inference is fleet-wide"
        return f"worker drainer {nothing}", nothing
    errors = sorted({line.code for line in lines if line.code})
    problem = f"could not finish: {', '.join(errors) or 'unknown error'}"
    return f"worker drainer {problem}", f"checked the workers, but {problem}"


def headline(lines: list[Line]) -> tuple[str, str]:
    """(as done in enforce, as "would have" in a dry run) for the most important lines: steps
    first, then refusals, then fleet-wide slowness, then errors."""
    acted = [line for line in lines if line.outcome is not None]
    would = [line for line in lines if line.section == "would"]
    if acted or would:
        return _steps_headline(acted, would)
    refused = [line for line in lines if line.section == "refused" and line.outcome is None]
    if refused:
        return _refused_headline(refused)
    return _quiet_headline(lines)


def severity(lines: list[Line]) -> messages.Severity:
    if any(line.section == "fleet" for line in lines):
        return messages.Severity.CRITICAL
    stepping = [_step(line) for line in lines if line.section in ("done", "failed", "unknown", "would")]
    if any(line.section == "refused" for line in lines) or TAKING_OUT.intersection(stepping):
        return messages.Severity.WARNING
    return messages.Severity.INFO


def undo_steps(
    lines: list[Line], environment: str, service: str, region: str | None = None
) -> list[messages.Undo]:
    found: dict[str, messages.Undo] = {}
    for line in lines:
        step, task = _step(line), line.task_id
        if task is None:
            continue
        if line.section in ("done", "unknown") and step in MARKING:
            label = f"End the drain of task {task} (undrain; the operator's cooldown follows)"
            found.setdefault(
                label, messages.drainer_undo(label, environment, service, "undrain", task, region)
            )
        elif line.section == "done" and step is Step.UNDO:
            label = f"Drain task {task} again by hand (it stays drained until undrain)"
            found.setdefault(label, messages.drainer_undo(label, environment, service, "drain", task, region))
        elif line.section == "would" and step in MARKING and line.step is not None:
            label = f"Keep the drainer off task {task} for good"
            found.setdefault(label, messages.Undo(label=label, command=exclude_command(line.step.task_arn)))
    return [*found.values(), messages.stop_function_undo(environment, FUNCTION, region)]


def _p(detail: dict[str, Any]) -> str:
    value = detail.get("p_value")
    return messages.p_value(value) if isinstance(value, float | int) else "p unknown"


def trigger_line(facts: RunFacts) -> str:
    trigger = facts.trigger
    if trigger is None:
        return "Trigger: unknown"
    detail = trigger.detail
    what = {
        TriggerKind.ALARM: f"{detail.get('state')} since {detail.get('since')}",
        TriggerKind.SUSPECT_WORKER: f"task {detail.get('task_id')} named by the TTS responder ({_p(detail)})",
        TriggerKind.SCHEDULE: f"tick of {detail.get('time')}",
        TriggerKind.MANUAL: f"{detail.get('action')} by hand",
    }[trigger.kind]
    return f"Trigger: {trigger.kind.value} {trigger.source}: {what}"


def _why(lines: list[Line], facts: RunFacts) -> list[str]:
    why = [trigger_line(facts)]
    for line in lines:
        step = line.step
        evidence = f"{step.step.value} {step.task_id}: {step.reason}" if step is not None else None
        if evidence and line.section != "refused" and evidence not in why:
            why.append(evidence)
    return why + [line.text for line in lines if line.section == "fleet"]


def _tasks(lines: list[Line]) -> list[PlannedStep]:
    """The steps the message is about, one per task, in the order told."""
    seen: dict[str, PlannedStep] = {}
    for line in lines:
        if line.step is not None:
            seen.setdefault(line.step.task_id, line.step)
    return list(seen.values())


def _links(lines: list[Line], facts: RunFacts, context: MessageContext) -> list[messages.Link]:
    settings, region = context.settings, context.region
    general = messages.function_links(
        region=region,
        environment=settings.environment_name,
        function=FUNCTION,
        runbook=settings.runbook(FUNCTION),
        invocation_id=facts.invocation_id,
        around=facts.started_at,
        agent_service=settings.agent_service,
    )
    links = general[:1]  # the runbook first
    if region is not None:
        if context.alarm_name:
            links.append(messages.Link(label="Alarm", url=alarm_link(region, context.alarm_name)))
        for step in _tasks(lines)[: messages.MAX_LISTED]:
            url = ecs_task_link(region, settings.ecs_cluster, step.task_id)
            links.append(messages.Link(label=f"ECS task {step.task_id}", url=url))
    return links + general[1:]


def compose(lines: list[Line], facts: RunFacts, context: MessageContext) -> messages.Notification:
    env = context.settings.environment_name
    counts = messages.Counts.from_report(facts)
    # Refusals by the plan (a guardrail, an excluded task, a protected room) are refusals too.
    refused = sum(line.section == "refused" and line.outcome is None for line in lines)
    acted, would = headline(lines)
    return messages.Notification(
        environment=env,
        function=FUNCTION,
        agent_service=context.settings.agent_service,
        incident_id=context.incident_id,
        severity=severity(lines),
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=acted, would=would),
        why=_why(lines, facts),
        details=[line.text for line in lines if line.section not in ("error", "fleet")],
        counts=counts.model_copy(update={"refused": counts.refused + refused}),
        errors=[line.text for line in lines if line.section == "error"],
        undo=undo_steps(lines, env, context.settings.agent_service, context.region),
        links=_links(lines, facts, context),
        resources=[step.task_arn for step in _tasks(lines)],
        invocation_id=facts.invocation_id,
    )
