"""What the mutation check (``make mutation``) mutates, module by module, and the tests that cover
each module: every runtime module of the shared layer, the three functions, the console commands
and the construct.

A module here is a named group of source files with the test files that exercise them. Each module
is staged and run apart (build/mutation/<module>), so one module's run maps and re-runs only its
own tests: a module takes minutes on two cores, and the whole runtime can be split into shards.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    name: str
    what: str
    # Staged paths (package at the top level, as Lambda imports it).
    mutated: tuple[str, ...]
    tests: tuple[str, ...]
    # Tests that would fail for the wrong reason under mutmut's instrumentation (CPU-time tests) or in
    # the staging folder (a test of the installed wheel's layout).
    deselected: tuple[str, ...] = ()
    # Checkout files or folders the tests read besides the packages (the example environments),
    # staged as they are.
    reads: tuple[str, ...] = ()


_FR = "fleet_remediation"
_WD = "worker_drainer"
_CLI = "livekit_fleet_remediation/cli"
_CONSTRUCTS = "livekit_fleet_remediation/constructs"

MODULES: tuple[Module, ...] = (
    Module(
        "reaper",
        "the reaping policy, its executor and outcomes, and the reaper's service",
        (
            f"{_FR}/domain/reaping.py",
            f"{_FR}/domain/reap_executor.py",
            f"{_FR}/domain/reap_outcomes.py",
            "zombie_reaper/work.py",
        ),
        (
            "tests/unit/test_reaper_service.py",
            "tests/unit/test_reaper_grace_and_journal.py",
            "tests/unit/test_reap_executor.py",
            "tests/unit/test_reaping_policy.py",
            "tests/unit/test_report_bounds.py",
            "tests/faults/test_reaper_livekit_faults.py",
        ),
    ),
    Module(
        "routing",
        "alarm routing, the kill switch and the budgets",
        (f"{_FR}/core/routing.py", f"{_FR}/core/kill_switch.py", f"{_FR}/contract/budgets.py"),
        (
            "tests/unit/test_routing_and_budgets.py",
            # Every route of every function, at the door (the routes' own refusals and triggers).
            "tests/unit/test_door.py",
            "tests/unit/test_kill_switch_read.py",
            "tests/unit/test_reap_switch_reads.py",
            "tests/unit/test_reaper_routes_every_service.py",
            "tests/integration/test_kill_switch.py",
            "tests/integration/test_agent_services.py",
        ),
    ),
    Module(
        "shared_adapters",
        "the shared layer's AWS clients, LiveKit rooms, Logs Insights and once-keys",
        (
            f"{_FR}/adapters/aws_clients.py",
            f"{_FR}/adapters/livekit_rooms.py",
            f"{_FR}/adapters/logs_insights.py",
            f"{_FR}/adapters/idempotency.py",
        ),
        (
            "tests/unit/test_aws_clients.py",
            "tests/unit/test_clients_from_the_budgeted_factory.py",
            "tests/unit/test_routing_and_budgets.py",
            "tests/unit/test_logs_insights_deadlines.py",
            "tests/unit/test_worker_drainer_insights.py",
            "tests/unit/test_secret_reads.py",
            "tests/unit/test_secret_never_logged.py",
            "tests/unit/test_livekit_rooms.py",
            "tests/faults/test_once_record_unknown.py",
            "tests/integration/test_livekit_rooms_deadlines.py",
            "tests/integration/test_alarm_states.py",
            "tests/integration/test_tts_reach_alarm.py",
        ),
    ),
    Module(
        "tts_reach",
        "the responder's analysis, its hypergeometric test and its service",
        ("tts_reach_alarm/analysis.py", "tts_reach_alarm/hypergeometric.py", "tts_reach_alarm/work.py"),
        (
            "tests/unit/test_tts_reach_analysis.py",
            "tests/unit/test_tts_reach_edges.py",
            "tests/integration/test_tts_reach_alarm.py",
        ),
        ("tests/unit/test_tts_reach_analysis.py::test_five_thousand_jobs_take_well_under_a_second_of_cpu",),
    ),
    Module(
        "drainer",
        "the drainer's ladder, guardrails, executor, saga, capacity, evidence, recovery, validation",
        tuple(
            f"{_WD}/{name}.py"
            for name in (
                "decide/ladder",
                "decide/guardrails",
                "act/ladder_executor",
                "act/cordon_saga",
                "decide/capacity_settlement",
                "act/capacity_keeper",
                "read/job_evidence",
                "decide/recovery_evidence",
                "read/target_checks",
            )
        ),
        (
            "tests/unit/test_worker_drainer_attribution.py",
            "tests/unit/test_worker_drainer_capacity.py",
            "tests/unit/test_worker_drainer_ladder.py",
            "tests/unit/test_worker_drainer_ladder_safety.py",
            "tests/unit/test_worker_drainer_reporting.py",
            "tests/unit/test_worker_drainer_stats.py",
            "tests/unit/test_worker_drainer_validation.py",
            "tests/integration/test_worker_drainer.py",
            "tests/integration/test_worker_drainer_safety.py",
            "tests/faults/test_drainer_saga_faults.py",
        ),
    ),
    Module(
        "drainer_adapters",
        "the drainer's ECS, ledger, capacity-debt and probe adapters",
        tuple(
            f"{_WD}/adapters/{name}.py" for name in ("ecs_tasks", "ledger", "capacity_debts", "worker_probe")
        ),
        (
            "tests/unit/test_worker_drainer_capacity.py",
            "tests/integration/test_worker_drainer.py",
            "tests/integration/test_worker_drainer_safety.py",
            "tests/integration/test_worker_drainer_step_calls.py",
            "tests/faults/test_drainer_saga_faults.py",
            "tests/faults/test_side_effect_outcomes.py",
        ),
    ),
    Module(
        "door",
        "the door: typed refusal of malformed events, and the suspect route",
        (f"{_FR}/core/door.py", f"{_FR}/core/suspect_route.py", f"{_FR}/contract/events.py"),
        (
            "tests/unit/test_door.py",
            "tests/unit/test_worker_drainer_validation.py",
            "tests/integration/test_bad_inputs.py",
        ),
    ),
    Module(
        "task_detection",
        "per-task detection: the per-task reach rule and its group events, its query and rows, the silent "
        "task and the task scope",
        (
            f"{_FR}/contract/task_reach.py",
            f"{_FR}/domain/task_reach.py",
            f"{_FR}/domain/group_verdict.py",
            f"{_FR}/adapters/task_reach_rows.py",
            f"{_WD}/read/task_reach_query.py",
            f"{_WD}/read/silent_task_tick.py",
            f"{_WD}/act/task_scope_check.py",
        ),
        (
            "tests/unit/test_task_reach.py",
            "tests/unit/test_task_reach_edges.py",
            "tests/unit/test_group_verdict.py",
            "tests/unit/test_task_sighting.py",
            "tests/unit/test_task_scope_check.py",
            "tests/unit/test_silent_task_tick.py",
            "tests/unit/test_worker_drainer_steps.py",
            "tests/integration/test_worker_drainer_silent_task.py",
            "tests/integration/test_worker_drainer_task_scope.py",
        ),
    ),
    Module(
        "holds",
        "holds: the disruption window, deployments in progress and the step table's flags",
        (
            f"{_FR}/core/holds.py",
            f"{_FR}/contract/disruption_window.py",
            f"{_FR}/adapters/deployments.py",
            f"{_FR}/contract/drainer_steps.py",
        ),
        (
            "tests/unit/test_disruption_window.py",
            "tests/unit/test_deployments.py",
            "tests/unit/test_drainer_step_holds.py",
            "tests/unit/test_worker_drainer_steps.py",
            "tests/integration/test_worker_drainer_holds.py",
            "tests/integration/test_reaper_holds.py",
            "tests/integration/test_worker_drainer_step_calls.py",
        ),
    ),
    Module(
        "scan_budget",
        "the scan budget: the tally, the ceiling and the windowed Insights reads",
        (f"{_FR}/adapters/scan_budget.py", f"{_FR}/adapters/windowed_insights.py"),
        (
            "tests/unit/test_scan_budget_rules.py",
            "tests/unit/test_windowed_insights.py",
            "tests/unit/test_task_reach.py",
            "tests/integration/test_scan_budget.py",
            "tests/integration/test_worker_drainer_scan_budget.py",
        ),
    ),
    Module(
        "action_events",
        "action events: their contract, the per-run cap and the summary of what was not sent",
        (f"{_FR}/adapters/action_events.py", f"{_FR}/contract/action_events.py", f"{_FR}/core/announce.py"),
        (
            "tests/unit/test_pipeline.py",
            "tests/unit/test_action_event_cap.py",
            "tests/unit/test_action_event_outcomes.py",
            # The one fault test of the action events (the file's other faults take minutes).
            "tests/faults/test_side_effect_outcomes.py::test_an_action_event_that_may_have_landed_is_put_once",
        ),
    ),
    Module(
        "chat_actions",
        "chat actions: the buttons (commands, variables, attachments), the command budget and the door",
        (f"{_FR}/core/chat_actions.py",),
        (
            "tests/unit/test_chat_buttons.py",
            "tests/unit/test_chat_entry.py",
        ),
        # Not here: the tests that synthesize the buttons or check the budget at synth
        # (tests/infra/test_chat_actions.py: they read examples/, which is not staged) or run the button
        # end to end (tests/integration/test_chat_undo_button.py: past 30 s a test under a shared
        # machine's load); the unit tests pin each button, the budget and the door in this module.
    ),
    Module(
        "console",
        "the console commands (lkfr): undo, invoke, redrive, plan",
        (
            f"{_CLI}/undo.py",
            f"{_CLI}/invoke.py",
            f"{_CLI}/common.py",
            f"{_CLI}/redrive.py",
            f"{_CLI}/plan.py",
            f"{_CLI}/plan_livekit.py",
        ),
        (
            "tests/unit/test_cli.py",
            "tests/unit/test_redrive_events.py",
            "tests/integration/test_undo_production_client.py",
            "tests/integration/test_plan_cli.py",
            "tests/integration/test_plan_errors.py",
            "tests/integration/test_dead_letter_redrive.py",
        ),
        # The layout of the installed wheel (its package roots under the checkout, which the staging
        # folder does not have): a packaging test, not one of the commands' rules.
        (
            "tests/unit/test_cli.py::test_no_command_loads_the_cdk_or_the_development_tree",
            "tests/unit/test_cli.py::test_the_replay_runs_with_only_the_packages_on_the_path",
        ),
        ("examples", "cdk.json"),
    ),
    Module(
        "construct",
        "the construct's IAM and template (synthesis; slow: minutes per mutant)",
        (
            f"{_CONSTRUCTS}/remediation_function.py",
            f"{_CONSTRUCTS}/worker_drainer.py",
            f"{_CONSTRUCTS}/zombie_reaper.py",
            f"{_CONSTRUCTS}/tts_reach.py",
            f"{_CONSTRUCTS}/chat_actions.py",
            f"{_CONSTRUCTS}/scan_budget.py",
            f"{_CONSTRUCTS}/kill_switch.py",
            f"{_CONSTRUCTS}/function_parts.py",
        ),
        (
            "tests/infra/test_construct.py",
            "tests/infra/test_worker_drainer.py",
            "tests/infra/test_chat_actions.py",
            "tests/infra/test_scan_budget_stack.py",
            "tests/infra/test_operator_controls.py",
            "tests/infra/test_action_events.py",
        ),
    ),
)


def by_name(name: str) -> Module:
    for module in MODULES:
        if module.name == name:
            return module
    raise SystemExit(f"no mutation module {name!r}; the modules are: {', '.join(m.name for m in MODULES)}")


def shard(spec: str) -> tuple[Module, ...]:
    """``I/N``: the I-th of N shards (1-based), every N-th module from the I-th."""
    index, _, count = spec.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise SystemExit(f"--shard {spec!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return MODULES[int(index) - 1 :: int(count)]


# Surviving mutants that change no behaviour a caller can see, each with the reason (read it before
# adding one: a survivor that a test could kill belongs in a test, not here).
EQUIVALENT: dict[str, str] = {
    "livekit_fleet_remediation.cli.redrive.x_redrive__mutmut_5": (
        "a receive without Messages read as None instead of []: both are empty, the listing ends the same"
    ),
    "livekit_fleet_remediation.cli.redrive.x_redrive__mutmut_7": (
        "a receive without Messages read as None (no default) instead of []: the listing ends the same"
    ),
    "livekit_fleet_remediation.cli.redrive.x_dead_letter_queue__mutmut_23": (
        "the queue ARN split at every colon instead of the first five: an SQS queue name has no colon"
    ),
    "livekit_fleet_remediation.cli.redrive.x_dead_letter_queue__mutmut_24": (
        "the queue ARN split from the right: an SQS queue name has no colon, the six parts are the same"
    ),
    "livekit_fleet_remediation.cli.redrive.x_dead_letter_queue__mutmut_26": (
        "the queue ARN split at the first six colons: it has five (a queue name has no colon)"
    ),
    "livekit_fleet_remediation.cli.redrive.x_derive__mutmut_19": (
        "a parked manual payload without dry_run read as None instead of True: neither is False, both "
        "replay as a dry run"
    ),
    "livekit_fleet_remediation.cli.redrive.x_derive__mutmut_21": (
        "a parked manual payload without dry_run read as None (no default): not False, a dry run either way"
    ),
    "livekit_fleet_remediation.cli.redrive.x_derive__mutmut_60": (
        "a parked tick's window end read through the alarm's reader: a tick has no state timestamp, so "
        "the reader falls back to the event's time, the same value"
    ),
    "livekit_fleet_remediation.cli.redrive.x_redrive_one__mutmut_10": (
        "a message without a body read as another non-JSON text: not JSON either way, kept as no event"
    ),
    "livekit_fleet_remediation.cli.redrive.x_redrive_one__mutmut_11": (
        "a body that is not JSON read as the empty text instead of None: neither is an object, kept the same"
    ),
    "livekit_fleet_remediation.cli.common.x_plain__mutmut_9": (
        "the double quote's removal matches nothing: the next replace removes every backtick, paired or not"
    ),
    "tts_reach_alarm.hypergeometric.x_hypergeometric_tail__mutmut_5": (
        "the cap at 2.0 instead of 1.0 of the exponential of a log tail that is at most 0 (one minus a "
        "sum, or a pmf times a sum the tail bounds): it never reaches either cap"
    ),
    "fleet_remediation.core.chat_actions.x_chat_command__mutmut_6": (
        "the item separator of a button's payload: every payload has exactly one key (the door refuses "
        "any other), so no item separator is ever written"
    ),
    "fleet_remediation.core.door.xǁDoorǁfor_invocation__mutmut_4": (
        "a missing function ARN is matched as 'XXXX' instead of '': neither is a Lambda ARN, so the "
        "door is the same closed door"
    ),
    "fleet_remediation.contract.disruption_window.xǁDisruptionWindowǁallows__mutmut_5": (
        "start == end read as a same-day window instead of one across midnight: the model refuses a "
        "window whose end equals its start, so allows never sees one"
    ),
    "fleet_remediation.contract.budgets.x_drainer_seconds_needed__mutmut_13": (
        "two tag-write reads times their worst case or divided by it: that worst case is 1 s "
        "(TAG_WRITES_READ, pinned in tests/unit/test_routing_and_budgets.py), so the sum is the same"
    ),
    "fleet_remediation.contract.budgets.x_drainer_seconds_needed__mutmut_14": (
        "four group-record calls times their worst case or divided by it: that worst case is 1 s "
        "(GROUP_RECORD_CALL, pinned in tests/unit/test_routing_and_budgets.py), so the sum is the same"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_29": (
        "the row's key is built from ``keys``, one item each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_32": (
        "the row's key is built from ``keys``, one item each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_33": (
        "the row's key is built from ``keys``, one item each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_36": (
        "the totals are built from ``counts``, one each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_39": (
        "the totals are built from ``counts``, one each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_summed__mutmut_40": (
        "the totals are built from ``counts``, one each: zipped strictly or not, the same pairs"
    ),
    "fleet_remediation.adapters.windowed_insights.x_planned_pieces__mutmut_3": (
        "expected_rows < 0 instead of <= 0: a 0 is already caught by ``not expected_rows``"
    ),
    "fleet_remediation.adapters.windowed_insights.x_planned_pieces__mutmut_4": (
        "expected_rows <= 1 returns 1 piece for 1 row, which ceil(1 / (limit * FILL)) is too"
    ),
    "fleet_remediation.adapters.scan_budget.xǁCloudWatchIncomingBytesǁestimate__mutmut_15": (
        "the operation named in an error the estimate catches and drops (an unknown estimate is None)"
    ),
    "fleet_remediation.adapters.scan_budget.xǁCloudWatchIncomingBytesǁestimate__mutmut_16": (
        "the resource named in an error the estimate catches and drops (an unknown estimate is None)"
    ),
    "fleet_remediation.domain.group_verdict.x__labels__mutmut_11": (
        "the revision is the task definition ARN's last segment: split at the last slash only or at "
        "every slash, the last segment is the same"
    ),
    "fleet_remediation.domain.group_verdict.x__labels__mutmut_12": (
        "split at the first slash instead of the last: a task definition ARN has one slash "
        "(task-definition/FAMILY:REVISION; a family name has none)"
    ),
    "fleet_remediation.domain.group_verdict.x__labels__mutmut_14": (
        "split at the last two slashes instead of the last: a task definition ARN has one slash"
    ),
    "worker_drainer.read.silent_task_tick.x_during_silent_task__mutmut_93": (
        "the tick's suspect keeps the trigger's group members or the default: a group seen now returns "
        "before any suspect is named, so those members are always the empty default"
    ),
    "fleet_remediation.domain.task_reach.x_assess_task_reach__mutmut_75": (
        "the tail at the healthy rate is computed again instead of reused: the same arguments, the same value"
    ),
    "fleet_remediation.domain.task_reach.x_binomial_tail__mutmut_1": (
        "k = 0 goes on to the next check, k <= n * p, which holds for every n and p: 1.0 either way"
    ),
    "fleet_remediation.domain.task_reach.x_binomial_tail__mutmut_33": (
        "the sum goes on past the terms below 1e-12 of it (to i = n, whose factor is 0): a change "
        "below the precision the decision reads"
    ),
    "fleet_remediation.domain.task_reach.x_binomial_tail__mutmut_34": (
        "one more term at i = n, whose factor (n - i) is 0: it adds nothing"
    ),
    "fleet_remediation.domain.task_reach.x_binomial_tail__mutmut_35": (
        "a term exactly 1e-12 of the sum is added too: below the precision the decision reads"
    ),
    "fleet_remediation.domain.task_reach.x_binomial_tail__mutmut_56": (
        "the cap at 1.0 of an upper tail above the mean, which is under 1 (the sum never reaches it)"
    ),
}
