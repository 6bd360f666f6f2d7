"""What the mutation check (``make mutation``) mutates, module by module, and the tests that cover
each module: every runtime module of the shared layer, the four functions, the console commands and
the construct.

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
    # Its tests share templates synthesized once per session: every function any of them reached
    # counts as reached by all of them (devkit/mutation_fixture_hits.py).
    shared_fixtures: bool = False
    # Its tests start a jsii kernel (a node process) when they import the CDK: mutmut's plain fork
    # would hand the stats run's kernel to every mutant and, once it exits, reap it as a mutant of
    # its own. A fork server that imports nothing keeps that run apart: each mutant starts its own.
    fork_server: bool = False


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
            # The kill switch's re-read before each reap step (SwitchReads), threaded or cached.
            "tests/unit/test_reap_switch_reads.py",
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
        # Not here: tests/unit/test_clients_from_the_budgeted_factory.py reads the checkout's source
        # (layers/, which the staging folder does not have) and runs none of the adapters.
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
            # Not here: the drainer's integration and fault tests (a real worker, LiveKit and moto:
            # minutes a mutant on a shared machine, and a LiveKit timeout under its load fails the
            # clean run); the unit tests pin the ladder, the executor, the saga, the capacity keeper
            # and the evidence over an ECS, a ledger and LiveKit rooms in memory.
        ),
    ),
    Module(
        "drainer_adapters",
        "the drainer's ECS, ledger, capacity-debt and probe adapters",
        tuple(
            f"{_WD}/adapters/{name}.py" for name in ("ecs_tasks", "ledger", "capacity_debts", "worker_probe")
        ),
        (
            "tests/unit/test_worker_drainer_adapters.py",
            "tests/unit/test_worker_drainer_capacity.py",
            # Not here: the drainer's integration and fault tests (a real worker, LiveKit and moto:
            # minutes a mutant on a shared machine); the unit tests pin each ECS request and answer
            # on a stubbed client, each ledger condition on moto's DynamoDB, the debt's item, the probe.
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
            "tests/unit/test_plan_main.py",
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
        "scheduled_drill",
        "the scheduled drill's stages, record and messages, and the drill's steps, marker and timeline",
        (
            "scheduled_drill/work.py",
            "scheduled_drill/record.py",
            "scheduled_drill/messages.py",
            f"{_FR}/domain/drill_steps.py",
            f"{_FR}/adapters/drill_marker.py",
            f"{_FR}/core/audit_timeline.py",
            f"{_FR}/contract/drill_schedule.py",
        ),
        (
            "tests/unit/test_drill_steps.py",
            "tests/unit/test_audit_timeline.py",
            "tests/unit/test_scheduled_drill_units.py",
            "tests/unit/test_step_vocabulary.py",
            "tests/integration/test_scheduled_drill.py",
        ),
        # Not here: lkfr drill's and lkfr audit's end-to-end tests (tests/integration/test_drill.py,
        # test_audit.py), which reach the same steps, marker and timeline through the console on moto;
        # the unit tests above pin those rules where they live. The step vocabulary's test reads the
        # standalone example's configuration.
        reads=("examples",),
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
        # Every synthesis test: a property of one function (its timeout, layers, log group) is pinned
        # in the files of the features that read it, not in one file of the construct's.
        ("tests/infra",),
        # Each starts Python afresh on the checkout's package roots, which the staging folder does
        # not have: packaging tests, not rules of the template.
        deselected=(
            "tests/infra/test_construct.py::test_importing_the_package_does_not_load_the_cdk",
            "tests/infra/test_construct.py::test_the_standalone_app_without_a_configuration_file_says_what_to_pass",
        ),
        reads=("examples", "cdk", "cdk.json", "functions", "layers/shared", "build/layers"),
        shared_fixtures=True,
        fork_server=True,
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
    "livekit_fleet_remediation.constructs.worker_drainer.xǁWorkerDrainerǁ_ledger_table__mutmut_9": (
        "the ledger's removal policy left to CDK's default for a DynamoDB table, which is RETAIN too"
    ),
    "livekit_fleet_remediation.constructs.chat_actions.xǁChatEntryPointǁ_statements__mutmut_25": (
        "lstrip takes a set of characters: every switch's name starts '/l', so 'XX/XX' strips the same '/'"
    ),
    "livekit_fleet_remediation.cli.invoke.x_lambda_invoker__mutmut_59": (
        "InvokeResult's error passed as None or left to its default, which is None"
    ),
    "livekit_fleet_remediation.cli.undo.x_parser__mutmut_7": (
        "the undo parser's formatter class dropped: add_common sets the commands' PlainHelpFormatter over it"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁsend_data__mutmut_5": (
        "a data packet's kind None instead of RELIABLE: RELIABLE is the enum's 0, protobuf's default"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁsend_data__mutmut_9": (
        "a data packet's kind left out instead of RELIABLE: RELIABLE is the enum's 0, protobuf's default"
    ),
    "fleet_remediation.domain.drill_steps.x_choose_task__mutmut_45": (
        "a task without startedAt sorted last instead of first: DescribeTasks sets startedAt on every "
        "task that reached RUNNING, the only ones listed"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁ_room_admin__mutmut_7": (
        "failover=None instead of False: livekit-api tests it for truth, None is no failover too"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁ_rooms__mutmut_24": (
        "failover=None instead of False: livekit-api tests it for truth, None is no failover too"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁ__init____mutmut_15": (
        "the renewal instant starts as None instead of 0.0: the first call signs a token because there is "
        "no client yet, before the instant is read"
    ),
    "fleet_remediation.adapters.aws_clients.x_guard_side_effects__mutmut_15": (
        "the no-retry hook registered without its unique id: a second registration on one client adds the "
        "same hook, which answers the same (no retry)"
    ),
    "fleet_remediation.adapters.aws_clients.x_guard_side_effects__mutmut_18": (
        "the no-retry hook registered without its unique id: a second registration on one client adds the "
        "same hook, which answers the same (no retry)"
    ),
    "fleet_remediation.adapters.idempotency.xǁDynamoDBOnceGuardǁ__init____mutmut_11": (
        "what Powertools does without an idempotency key: every call passes its once-key (a non-empty "
        "dict), so it never is without one"
    ),
    "fleet_remediation.adapters.idempotency.xǁDynamoDBOnceGuardǁ__init____mutmut_13": (
        "what Powertools does without an idempotency key: every call passes its once-key (a non-empty "
        "dict), so it never is without one"
    ),
    "fleet_remediation.adapters.idempotency.xǁDynamoDBOnceGuardǁ__init____mutmut_14": (
        "what Powertools does without an idempotency key: every call passes its once-key (a non-empty "
        "dict), so it never is without one"
    ),
    "scheduled_drill.work.xǁDrillStagesǁrecord__mutmut_2": (
        "a snapshot without a plan read as recordable: decide is pure and always plans a read snapshot, "
        "so both are set or neither is"
    ),
    "scheduled_drill.work.xǁDrillStagesǁread__mutmut_26": (
        "the target's cluster left out: no call reads it, the marker's and the record's calls name the "
        "task by its ARN and id"
    ),
    "fleet_remediation.adapters.livekit_rooms.x_read_credentials__mutmut_49": (
        "the fields of a refused secret joined by 'XX.XX' within a field's location: the credentials' two "
        "fields are flat, each location has one part"
    ),
    "fleet_remediation.adapters.livekit_rooms.xǁLiveKitRoomServiceǁ_rooms__mutmut_3": (
        "the token renewed at its renewal instant or just after it: time.monotonic() is never that exact "
        "float twice, no call can tell"
    ),
    "fleet_remediation.domain.drill_steps.x_choose_task__mutmut_43": (
        "a task without startedAt sorted last instead of first: DescribeTasks sets startedAt on every "
        "task that reached RUNNING, the only ones listed"
    ),
    "fleet_remediation.domain.drill_steps.x_choose_task__mutmut_49": (
        "a task without startedAt sorted last instead of first: DescribeTasks sets startedAt on every "
        "task that reached RUNNING, the only ones listed"
    ),
    "fleet_remediation.domain.drill_steps.x_choose_task__mutmut_60": (
        "a task without the exclude tag read as 'XXXX' instead of '': neither is true, the task is "
        "drillable either way"
    ),
    "fleet_remediation.adapters.aws_clients.x__no_retry_after_ambiguous_attempt__mutmut_24": (
        "a reply without a status read as 201 instead of 200: both are under 500, the retry mode decides"
    ),
    "scheduled_drill.messages.x__verdict__mutmut_5": (
        "a run is answered exactly when it has an answer's time (answered_after is None only without an "
        "answer): and or or, the same"
    ),
    "scheduled_drill.record.xǁDrillRecordǁ_reports__mutmut_39": (
        "an event without a message read as 'XXXX' instead of '': neither is JSON, no report either way"
    ),
    "scheduled_drill.messages.x__verdict__mutmut_11": (
        "the verdict's dry-run words are set to its words on the next line, whatever they were"
    ),
    "scheduled_drill.messages.x__verdict__mutmut_14": (
        "the verdict's dry-run words are set to its words on the next line, whatever they were"
    ),
    "scheduled_drill.messages.x__verdict__mutmut_18": (
        "the verdict's dry-run words are set to its words on the next line, whatever they were"
    ),
    "scheduled_drill.messages.x__verdict__mutmut_23": (
        "the verdict's dry-run words are set to its words on the next line, whatever they were"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_4": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_5": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_6": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_7": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_31": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_32": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_33": (
        "the run's own kind, action, target and reason are replaced in every entry made from it"
    ),
    "fleet_remediation.core.audit_timeline.x_from_report__mutmut_146": (
        "a failed run's entry is added only when there is no other: added to an empty list or made it, "
        "the same"
    ),
    "fleet_remediation.core.audit_timeline.x__at__mutmut_6": (
        "Python 3.11's fromisoformat reads a trailing Z itself: replaced or not, the same instant"
    ),
    "fleet_remediation.core.audit_timeline.x__at__mutmut_7": (
        "Python 3.11's fromisoformat reads a trailing Z itself: replaced or not, the same instant"
    ),
    "fleet_remediation.core.audit_timeline.x_from_ledger__mutmut_10": (
        "an item without a sort key read as 'XXXX' instead of '': neither starts with audit#, no step "
        "either way"
    ),
    "fleet_remediation.core.audit_timeline.x_from_ledger__mutmut_20": (
        "the sort key audit#<time>#<invocation>#<step> has three more #s (an ISO time, a request id and "
        "a number have none): split from either end or with any limit of two or more, the same three "
        "parts"
    ),
    "fleet_remediation.core.audit_timeline.x_from_ledger__mutmut_21": (
        "the sort key audit#<time>#<invocation>#<step> has three more #s (an ISO time, a request id and "
        "a number have none): split from either end or with any limit of two or more, the same three "
        "parts"
    ),
    "fleet_remediation.core.audit_timeline.x_from_ledger__mutmut_29": (
        "the sort key audit#<time>#<invocation>#<step> has three more #s (an ISO time, a request id and "
        "a number have none): split from either end or with any limit of two or more, the same three "
        "parts"
    ),
    "fleet_remediation.domain.reap_executor.xǁSwitchReadsǁ_start__mutmut_9": (
        "the running read's task kept as None: while it waits, its thread's future holds it (the "
        "task's wake-up is that future's callback), so it is never collected before it answers"
    ),
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
    "tts_reach_alarm.work.xǁResponderStagesǁact__mutmut_2": (
        "no suspect's hand-over marked new as None instead of False: ``news`` reads it only with a plan, "
        "and the responder holds nothing back, so act sees no suspect only when there is no plan"
    ),
    "tts_reach_alarm.work.xǁResponderStagesǁact__mutmut_5": (
        "no suspect's hand-over marked new: ``news`` reads it only with a plan, and the responder holds "
        "nothing back, so act sees no suspect only when there is no plan"
    ),
    "tts_reach_alarm.work.xǁResponderStagesǁdecide__mutmut_5": (
        "a concentration without a top worker or without a family-wise p-value: a concentrated verdict "
        "always has both (only an inconclusive one lacks either), so the and reads as the or"
    ),
    "tts_reach_alarm.work.xǁResponderStagesǁdecide__mutmut_8": (
        "no findings and no concentration: findings always hold a concentration, so one is None exactly "
        "when the other is"
    ),
    "tts_reach_alarm.work.xǁResponderStagesǁread__mutmut_40": (
        "the level of a look the scan budget skipped, None instead of the re-check's: a look without "
        "findings records nothing (record stops there), so its level is never read"
    ),
    "tts_reach_alarm.work.xǁResponderStagesǁread__mutmut_42": (
        "the level of a look the scan budget skipped, left to its default None: a look without findings "
        "records nothing (record stops there), so its level is never read"
    ),
    "tts_reach_alarm.analysis.x__bounded__mutmut_43": (
        "an unsettled bracket's family-wise p-value passed as None or left to its default, None"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_12": (
        "the row of a worker's counts one slot shorter: it is written up to index len(none) - 1 + reach - "
        "1, and reach is at most the worker's jobs, so the last slot is never written"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_14": (
        "the row of a worker's counts one slot longer: the extra slot stays 0, below epsilon, and the row "
        "is cut to the slots at or above it"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_16": (
        "a row's mass placed when above epsilon instead of at or above it: a mass exactly epsilon is "
        "dropped, a change below the precision the result is computed to (RELATIVE_PRECISION of its lower "
        "bound)"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_41": (
        "the row cut from the first mass above epsilon instead of at or above it: a mass exactly epsilon "
        "dropped, below the result's precision"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_48": (
        "the row cut at the last mass above epsilon instead of at or above it: a mass exactly epsilon "
        "dropped, below the result's precision"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_10": (
        "a larger cutoff on a worker's terms (epsilon times the count of counts and the mass, not "
        "divided): measured over 400 random windows, the family-wise p-value moves by at most 4e-12 of "
        "itself, below RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_11": (
        "a smaller cutoff on a worker's terms (the mass is at most 1): more terms kept, the p-value moves "
        "below RELATIVE_PRECISION (at most 8e-14 of itself over 400 random windows)"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_13": (
        "a smaller cutoff on a worker's terms (high + low for high - low): more terms kept, the p-value "
        "moves below RELATIVE_PRECISION (at most 5e-14 of itself over 400 random windows)"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_14": (
        "a smaller cutoff on a worker's terms (one more count in the divisor): more terms kept, the "
        "p-value moves below RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_38": (
        "a term exactly at the cutoff ends the walk up instead of being added: below the result's precision"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_54": (
        "one more step below the mode, at the lowest count: its factor is 0 (k or the jobs left beside the "
        "worker's), so the term is 0 and the walk ends there anyway"
    ),
    "tts_reach_alarm.hypergeometric.x__place__mutmut_68": (
        "a term exactly at the cutoff ends the walk down instead of being added: below the result's precision"
    ),
    "tts_reach_alarm.hypergeometric.x__reach__mutmut_54": (
        "a tail exactly at the threshold (the observed p-value's log plus REACH_TOLERANCE) counted as "
        "past it: a sum of logs never lands on that float; the tolerance is what settles the ties"
    ),
    "tts_reach_alarm.hypergeometric.x__reach__mutmut_61": (
        "the log tail of a worker that reaches the threshold at every count, 1.0 instead of 0.0: it is "
        "only compared with 0 (at or above: it reaches whatever happens), so both read the same"
    ),
    "tts_reach_alarm.hypergeometric.x__reached_mass__mutmut_52": (
        "the rows carried to the next worker cut one row later: that row is below epsilon (or past the "
        "end), and the next worker skips every row below epsilon"
    ),
    "tts_reach_alarm.hypergeometric.x_log_family_wise__mutmut_18": (
        "no worker reaching the threshold marked not exact: that needs a threshold of 0 (log -inf), since "
        "the top worker reaches its own p-value; only family_wise_p_value passes one, and it drops the flag"
    ),
    "tts_reach_alarm.hypergeometric.x_log_family_wise__mutmut_26": (
        "the Bonferroni sum's log capped at 1.0 instead of 0.0: it is only compared with log(NEGLIGIBLE_P) "
        "and returned below it, where neither cap applies"
    ),
    "tts_reach_alarm.hypergeometric.x_log_family_wise__mutmut_32": (
        "the Bonferroni sum exactly at NEGLIGIBLE_P taken as negligible: a sum of tails never lands on "
        "that float"
    ),
    "tts_reach_alarm.hypergeometric.x_log_family_wise__mutmut_42": (
        "a smaller epsilon (failed + 2 for failed + 1): less mass dropped, the p-value moves below "
        "RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x_log_family_wise__mutmut_44": (
        "a smaller epsilon (one more worker in the divisor): less mass dropped, the p-value moves below "
        "RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x__reaching_workers__mutmut_6": (
        "the reaching workers placed smallest first: the probability is the same in any order; measured "
        "over 600 random windows the p-value moves by at most 1e-11 of itself, below RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x__reaching_workers__mutmut_7": (
        "the reaching workers placed smallest first (reverse=False): the probability is the same in any "
        "order; the p-value moves below RELATIVE_PRECISION"
    ),
    "tts_reach_alarm.hypergeometric.x__support__mutmut_24": (
        "the mode estimate one off (marked - 1): it only picks the side each sum starts from, and both "
        "sides sum the same tail; measured over 500 random windows the tail moves by at most 6e-12 of "
        "itself and the family-wise p-value by at most 3e-12, below the precision the decision reads"
    ),
    "tts_reach_alarm.hypergeometric.x__support__mutmut_25": (
        "the mode estimate one off (marked + 2): it only picks the side each sum starts from, and both "
        "sides sum the same tail; measured over 500 random windows the tail moves by at most 4e-12 of "
        "itself and the family-wise p-value by at most 2e-12, below the precision the decision reads"
    ),
    "tts_reach_alarm.hypergeometric.x__support__mutmut_26": (
        "the mode estimate one off (draws - 1): it only picks the side each sum starts from, and both "
        "sides sum the same tail; measured over 500 random windows the tail moves by at most 6e-12 of "
        "itself and the family-wise p-value by at most 1.5e-12, below the precision the decision reads"
    ),
    "tts_reach_alarm.hypergeometric.x__support__mutmut_27": (
        "the mode estimate one off (draws + 2): it only picks the side each sum starts from, and both "
        "sides sum the same tail; measured over 500 random windows the tail moves by at most 3e-12 of "
        "itself and the family-wise p-value by at most 1e-12, below the precision the decision reads"
    ),
    "tts_reach_alarm.hypergeometric.x__support__mutmut_29": (
        "the mode estimate one off (population + 3): it only picks the side each sum starts from, and both "
        "sides sum the same tail; measured over 500 random windows the tail moves by at most 1.5e-12 of "
        "itself and the family-wise p-value by at most 1.5e-12, below the precision the decision reads"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_24": (
        "a count at the mode summed upward instead of as one minus the side below: both sums are the same "
        "tail (the terms fall from the mode either way); at most 6e-12 of itself over 500 random windows"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_28": (
        "one more upward step, at the highest count: its factor (marked - k)(draws - k) is 0, so it adds 0"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_44": (
        "an upward term exactly 1e-17 of the sum ends the sum instead of being added: below float precision"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_63": (
        "one more downward step, at the lowest count: its factor is 0 (k or the unmarked left over), so it "
        "adds 0"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_79": (
        "a downward term exactly 1e-17 of the sum ends the sum instead of being added: below float precision"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_97": (
        "the guard below < 1.0 made always true: in that branch the count is at most the mode, so the tail "
        "is at least P(X = mode) and below stays under 1"
    ),
    "tts_reach_alarm.hypergeometric.x__reaching_workers__mutmut_20": (
        "a worker whose tail is 1 at its lowest count (it reaches whatever happens) kept in the sum "
        "instead of returning at once: its share is 1, the result is 1 (log 0) and exact either way"
    ),
    "tts_reach_alarm.hypergeometric.x__reaching_workers__mutmut_21": (
        "a worker whose tail is 1 at its lowest count kept in the sum (log tail 0 is not >= 1.0): its "
        "share is 1, the result is 1 (log 0) and exact either way"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_100": (
        "in that branch the count is at most the mode, so the tail is at least P(X = mode) and below stays "
        "under 1: never exactly 1"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_101": (
        "in that branch the count is at most the mode, so the tail is at least P(X = mode) and below stays "
        "under 1: never at or past 1"
    ),
    "tts_reach_alarm.hypergeometric.x_log_hypergeometric_tail__mutmut_102": (
        "in that branch the count is at most the mode, so the tail is at least P(X = mode) and below stays "
        "under 1: the else (now +inf) is never taken"
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
    "worker_drainer.act.capacity_keeper.xǁCapacityKeeperǁsettle__mutmut_11": (
        "the match's `case Move.NONE: pass` arm removed: with no arm matching, it falls through to the "
        "same `return plan`"
    ),
    "worker_drainer.act.cordon_saga.xǁCordonSagaǁundo__mutmut_19": (
        "the task ARN passed to a give-back (want_raised=False): settle reads the ARN only to raise, "
        "which a give-back never does"
    ),
    "worker_drainer.act.cordon_saga.xǁCordonSagaǁstop__mutmut_31": (
        "the task ARN passed to a give-back (want_raised=False): settle reads the ARN only to raise, "
        "which a give-back never does"
    ),
    "worker_drainer.act.cordon_saga.xǁCordonSagaǁundo__mutmut_20": (
        "want_raised None instead of False: settle reads it by its truth only, and None is falsy"
    ),
    "worker_drainer.act.cordon_saga.xǁCordonSagaǁstop__mutmut_32": (
        "want_raised None instead of False: settle reads it by its truth only, and None is falsy"
    ),
    "worker_drainer.act.ladder_executor.xǁDrainerExecutorǁ_acquire_lease__mutmut_17": (
        "the lease wait stops one poll later (0.4 s): the wait still ends at least 7.8 s before the "
        "deadline, so a step still fits and the run ends the same"
    ),
    "worker_drainer.act.ladder_executor.xǁDrainerExecutorǁ_acquire_lease__mutmut_18": (
        ">= instead of > between time.monotonic() and a deadline: they differ only at one exact float instant"
    ),
    "worker_drainer.act.ladder_executor.xǁDrainerExecutorǁ_gate__mutmut_2": (
        ">= instead of > between time.monotonic() and a deadline: they differ only at one exact float instant"
    ),
    "worker_drainer.act.ladder_executor.xǁDrainerExecutorǁ_task_scope_refusal__mutmut_5": (
        ">= instead of > between time.monotonic() and a deadline: they differ only at one exact float instant"
    ),
    "worker_drainer.act.ladder_executor.xǁDrainerExecutorǁ_apply__mutmut_65": (
        "the message of an AssertionError that cannot be raised: run applies only acting steps, the "
        "capacity steps return before the match and the match covers every other one"
    ),
    "worker_drainer.read.target_checks.xǁServiceIdentityǁof__mutmut_4": (
        "a missing function ARN is matched as 'XXXX' instead of '': neither is a Lambda ARN, so the "
        "identity is the cluster's alone either way"
    ),
    "worker_drainer.adapters.ecs_tasks.xǁBotoEcsTasksǁ_list_task_arns__mutmut_1": (
        "the first page's token '' instead of None: it is read by its truth only, and both are false"
    ),
    "worker_drainer.adapters.ledger.xǁDynamoLedgerǁ_query_debts__mutmut_16": (
        "the first page's start key '' instead of None: it is read by its truth only, and both are false"
    ),
    "worker_drainer.adapters.ecs_tasks.xǁBotoEcsTasksǁecs_managed_tags__mutmut_3": (
        "a missing enableECSManagedTags read as None instead of False: bool() of either is False"
    ),
    "worker_drainer.adapters.ecs_tasks.xǁBotoEcsTasksǁecs_managed_tags__mutmut_5": (
        "a missing enableECSManagedTags read as None (no default) instead of False: bool() of either is False"
    ),
    "worker_drainer.adapters.ecs_tasks.xǁBotoEcsTasksǁprotection__mutmut_39": (
        "a missing protectionEnabled read as None instead of False: read by its truth, both are false"
    ),
    "worker_drainer.adapters.ecs_tasks.xǁBotoEcsTasksǁprotection__mutmut_41": (
        "a missing protectionEnabled read as None (no default) instead of False: both are false"
    ),
    "worker_drainer.adapters.ledger.xǁDynamoLedgerǁ_call__mutmut_15": (
        "the default of a ClientError's Error mapping: botocore's parsers give every error response one"
    ),
    "worker_drainer.adapters.ledger.xǁDynamoLedgerǁ_call__mutmut_17": (
        "the default of a ClientError's Error mapping: botocore's parsers give every error response one"
    ),
    "worker_drainer.adapters.worker_probe.xǁHttpWorkerProbeǁactive_jobs__mutmut_13": (
        "rstrip('XX/XX') strips a trailing 'X' besides '/': the endpoint is http://<ip>:<port>, which "
        "never ends in 'X'"
    ),
}
