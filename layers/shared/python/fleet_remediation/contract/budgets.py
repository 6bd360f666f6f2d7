"""Timing budgets, in one place: the functions plan their deadlines with these numbers and the
settings models check at synth that the calls a run makes fit the Lambda timeout with them.

Every inner deadline is shorter than its caller's, so a slow dependency ends as a typed error in
the report, never as a killed Lambda.

AWS calls: each client is built from an ``AwsCallBudget`` (``adapters/aws_clients.py``), so the
socket timeouts and retries a client uses and the worst case the budgets count are one definition.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kept free after the last outside call: log the one report and flush the EMF metrics.
REPORT_MARGIN_SECONDS = 3.0

# botocore's retry back-off (standard and adaptive modes): before retry n (1-based) it sleeps a
# random share of min(2 ** (n - 1), 20) seconds for a throttling error, and less for others.
BOTOCORE_MAX_BACKOFF_SECONDS = 20.0
# Adaptive mode's client-side rate limiter never lets its fill rate fall below 0.5 requests per
# second, so one attempt waits at most 2 s for a token (single-threaded use, as in our functions).
ADAPTIVE_MAX_TOKEN_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class AwsCallBudget:
    """One AWS API call as a client makes it: per-attempt socket timeouts and how many attempts
    botocore may make in all (first try included).

    ``read_timeout_seconds`` bounds each wait for bytes from the endpoint, as botocore applies it;
    an endpoint that trickles one byte per interval is not bounded by it (AWS endpoints do not)."""

    service: str
    connect_timeout_seconds: float
    read_timeout_seconds: float
    attempts: int
    # botocore's adaptive retry mode (client-side rate limiting) where bursts of calls meet
    # throttling; standard mode elsewhere.
    adaptive: bool = False

    @property
    def worst_case_seconds(self) -> float:
        """The longest one call can take before it returns or raises: every attempt runs into both
        timeouts, every back-off is the longest botocore draws, every token wait the longest."""
        per_attempt = self.connect_timeout_seconds + self.read_timeout_seconds
        backoff = sum(
            min(2.0 ** (retry - 1), BOTOCORE_MAX_BACKOFF_SECONDS) for retry in range(1, self.attempts)
        )
        token_waits = self.attempts * ADAPTIVE_MAX_TOKEN_WAIT_SECONDS if self.adaptive else 0.0
        return self.attempts * per_attempt + backoff + token_waits


# The per-environment (and per-function) kill switch: SSM GetParameter.
KILL_SWITCH_READ = AwsCallBudget("ssm", connect_timeout_seconds=1.0, read_timeout_seconds=1.5, attempts=2)
# The LiveKit API key and secret: Secrets Manager GetSecretValue.
SECRET_READ = AwsCallBudget(
    "secretsmanager", connect_timeout_seconds=1.0, read_timeout_seconds=1.5, attempts=2
)
# The responder's ECS facts of the tasks in its rows (zone, revision, start: the shared group verdict):
# DescribeTasks, 100 tasks a call, one short attempt each (a read; a failed batch is unknown, and an
# unknown fact names nobody). The calls share RESPONDER_TASK_FACTS_SECONDS; one is started only while
# its worst case still fits in it, so a fleet of any size reads within it (what is left unread is unknown).
TASK_FACTS_READ = AwsCallBudget("ecs", connect_timeout_seconds=0.5, read_timeout_seconds=1.5, attempts=1)
RESPONDER_TASK_FACTS_SECONDS = 8.0
# The responder's suspect-worker event: EventBridge PutEvents.
SUSPECT_EVENT_PUT = AwsCallBudget("events", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=3)
# One write of a once-only record (Powertools Idempotency on DynamoDB). A guarded action costs two:
# the in-progress record before it and the result after it.
IDEMPOTENCY_WRITE = AwsCallBudget(
    "dynamodb", connect_timeout_seconds=1.0, read_timeout_seconds=1.0, attempts=2
)
IDEMPOTENCY_WRITES_PER_ACTION = 2
ONCE_RECORD_SECONDS = IDEMPOTENCY_WRITES_PER_ACTION * IDEMPOTENCY_WRITE.worst_case_seconds
# One call of the drainer's ledger (DynamoDB PutItem/DeleteItem/Query).
LEDGER_CALL = AwsCallBudget("dynamodb", connect_timeout_seconds=1.0, read_timeout_seconds=1.0, attempts=2)
# Logs Insights, one client per call: StartQuery creates a query, so it is sent once (one attempt: a
# lost reply leaves a query that may be running, never a second one); GetQueryResults is a read, and
# a failed poll is only a poll missed, so it too makes one short attempt and the loop polls again;
# the StopQuery of a query still running at its deadline has its time kept free from the start.
LOGS_INSIGHTS_START = AwsCallBudget("logs", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=1)
LOGS_INSIGHTS_POLL = AwsCallBudget("logs", connect_timeout_seconds=0.5, read_timeout_seconds=1.5, attempts=1)
LOGS_INSIGHTS_STOP = AwsCallBudget("logs", connect_timeout_seconds=1.0, read_timeout_seconds=1.0, attempts=1)
LOGS_INSIGHTS_POLL_INTERVAL_SECONDS = 1.0
# The scan budget's calls around each look, inside the look's own deadline: the log group's
# IncomingBytes over the window (CloudWatch GetMetricStatistics), the hour's tally (DynamoDB
# GetItem) and, for an alarm's first look, its look slot (a conditional UpdateItem) before it, the
# tally's atomic ADD after it. One short attempt each: an unreadable estimate leaves the look to the
# running stop, an unreadable tally or slot holds the look, an ADD that may have landed is never
# sent again.
SCAN_ESTIMATE_READ = AwsCallBudget(
    "cloudwatch", connect_timeout_seconds=0.25, read_timeout_seconds=0.5, attempts=1
)
SCAN_TALLY_CALL = AwsCallBudget(
    "dynamodb", connect_timeout_seconds=0.25, read_timeout_seconds=0.5, attempts=1
)
SCAN_BUDGET_LOOK_SECONDS = SCAN_ESTIMATE_READ.worst_case_seconds + 3 * SCAN_TALLY_CALL.worst_case_seconds
# The shortest query deadline under which a query can start: the scan budget's calls, the StartQuery,
# one poll and the stop kept for it.
LOGS_INSIGHTS_QUERY_FLOOR_SECONDS = (
    SCAN_BUDGET_LOOK_SECONDS
    + LOGS_INSIGHTS_START.worst_case_seconds
    + LOGS_INSIGHTS_POLL.worst_case_seconds
    + LOGS_INSIGHTS_STOP.worst_case_seconds
)


def insights_look_seconds(query_seconds: float) -> float:
    """The deadline a look needs to read Complete from a query that runs ``query_seconds`` after its
    StartQuery: the scan budget's calls, the StartQuery, the query, up to one poll interval until the
    poll that sees it done, and that poll, which starts only while its call and the stop still fit."""
    return LOGS_INSIGHTS_QUERY_FLOOR_SECONDS + query_seconds + LOGS_INSIGHTS_POLL_INTERVAL_SECONDS


# The plan CLI (tools/plan.py) reads the deployed drainer's configuration: Lambda GetFunctionConfiguration.
LAMBDA_CONFIGURATION_READ = AwsCallBudget(
    "lambda", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=3
)
# The drainer's tick reads the VAD alarm's state (CloudWatch DescribeAlarms, one alarm). One attempt:
# a failed read only leaves this tick to advancing the ladders; the next tick, a minute on, reads again.
ALARM_STATE_READ = AwsCallBudget(
    "cloudwatch", connect_timeout_seconds=1.0, read_timeout_seconds=1.0, attempts=1
)

# One SNS publish: the notifier makes one botocore attempt at a time and retries one SNS refused
# (throttled, no connection) with back-off itself, starting an attempt only while it fits inside
# PUBLISH_BUDGET_SECONDS (adapters/notifier.py). An attempt that may have landed is never repeated.
SNS_PUBLISH_ATTEMPT = AwsCallBudget("sns", connect_timeout_seconds=1.0, read_timeout_seconds=1.5, attempts=1)
PUBLISH_BUDGET_SECONDS = 3.0
# Delivering one notification after the work: the readable text and the chat JSON, each one publish
# under its own once-only record.
NOTIFICATION_CHANNELS = 2
NOTIFICATION_BUDGET_SECONDS = NOTIFICATION_CHANNELS * (PUBLISH_BUDGET_SECONDS + ONCE_RECORD_SECONDS)
# The action events after the work (contract/action_events.py): at most two PutEvents calls of one
# attempt each (an event that may have landed is never sent again), under one once-only record.
# The chat entry point: one asynchronous invoke of a drainer (it may have started the run: never
# sent twice) and one kill-switch write (``off`` twice is ``off``).
CHAT_FORWARD = AwsCallBudget("lambda", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=1)
SWITCH_OFF_WRITE = AwsCallBudget("ssm", connect_timeout_seconds=1.0, read_timeout_seconds=1.5, attempts=2)
ACTION_EVENTS_PUT = AwsCallBudget("events", connect_timeout_seconds=0.5, read_timeout_seconds=1.0, attempts=1)
ACTION_EVENT_PUTS_PER_RUN = 2
ANNOUNCE_SECONDS = ACTION_EVENT_PUTS_PER_RUN * ACTION_EVENTS_PUT.worst_case_seconds + ONCE_RECORD_SECONDS
# Whether an agent service is deploying (ECS DescribeServices, per service; the reaper's hold). One
# attempt: an unreadable answer holds the run's new disruption, the next run reads again.
DEPLOYMENT_READ = AwsCallBudget("ecs", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=1)
# The drainer's notice markers (one conditional PutItem per message line that a condition persisting
# across ticks keys): one attempt each, at most DRAINER_NOTICE_MARKERS a run (reporting.py tells the
# lines beyond them without a marker). Its outbox: one read, then one hold or release, per run.
NOTICE_MARKER_WRITE = AwsCallBudget(
    "dynamodb", connect_timeout_seconds=1.0, read_timeout_seconds=1.0, attempts=1
)
DRAINER_NOTICE_MARKERS = 6
DRAINER_OUTBOX_CALLS = 2
# The drainer's slowest step (a cordon: five ECS calls and its journal writes) must fit in this.
DRAINER_STEP_BUDGET_SECONDS = 8.0


def ecs_call(request_timeout_seconds: float) -> AwsCallBudget:
    """One ECS API call of the drainer. Bursts of task calls meet ECS throttling: adaptive mode."""
    return AwsCallBudget(
        "ecs",
        connect_timeout_seconds=min(1.0, request_timeout_seconds),
        read_timeout_seconds=request_timeout_seconds,
        attempts=3,
        adaptive=True,
    )


def guarded_action_seconds(call: AwsCallBudget) -> float:
    """An action run at most once (the responder's suspect-worker event): its call and its records."""
    return call.worst_case_seconds + ONCE_RECORD_SECONDS


# LiveKit requests one room costs the reaper at most: the re-check, then the delete (or the
# warning: metadata update and data message), then one re-read when the delete's reply was lost;
# before its step, the kill switch is read again.
LIVEKIT_REQUESTS_PER_ROOM = 3


def reaper_room_seconds(livekit_request_timeout_seconds: float) -> float:
    return LIVEKIT_REQUESTS_PER_ROOM * livekit_request_timeout_seconds + KILL_SWITCH_READ.worst_case_seconds


def reaper_seconds_needed(livekit_request_timeout_seconds: float) -> float:
    """Kill switch, the run's once-only record, credentials, the room listing, at least one room,
    the agent service's deployments (one service), the action events, the notification, the report."""
    return (
        KILL_SWITCH_READ.worst_case_seconds
        + ONCE_RECORD_SECONDS
        + SECRET_READ.worst_case_seconds
        + livekit_request_timeout_seconds
        + reaper_room_seconds(livekit_request_timeout_seconds)
        + DEPLOYMENT_READ.worst_case_seconds
        + ANNOUNCE_SECONDS
        + NOTIFICATION_BUDGET_SECONDS
        + REPORT_MARGIN_SECONDS
    )


def tts_reach_seconds_needed(query_timeout_seconds: float) -> float:
    """Kill switch, the TTS page's state (a scheduled re-check), two Logs Insights queries in
    sequence (outcomes, then the failing jobs' rooms; or, at scale, one row per task), the ECS facts
    of the tasks in them, the suspect-worker event (once-only), the action events, the
    notification, the report."""
    return (
        KILL_SWITCH_READ.worst_case_seconds
        + ALARM_STATE_READ.worst_case_seconds
        + 2 * query_timeout_seconds
        + RESPONDER_TASK_FACTS_SECONDS
        + guarded_action_seconds(SUSPECT_EVENT_PUT)
        + ANNOUNCE_SECONDS
        + NOTIFICATION_BUDGET_SECONDS
        + REPORT_MARGIN_SECONDS
    )


def drainer_step_seconds(ecs_request_timeout_seconds: float) -> float:
    """A step may start only if its slowest call (an ECS call and its ledger write) can end."""
    return max(
        DRAINER_STEP_BUDGET_SECONDS,
        ecs_call(ecs_request_timeout_seconds).worst_case_seconds + LEDGER_CALL.worst_case_seconds,
    )


# The drainer's open intents (steps a killed run began): read before the lease and again under it.
DRAINER_JOURNAL_READS = 2
# Its recent tag writes (laid over ECS's lagging reads): for the snapshot, and again under the lease.
# A query of a few small items; one short attempt, since a run that cannot read them starts no step
# (the next tick reads again).
TAG_WRITES_READ = AwsCallBudget("dynamodb", connect_timeout_seconds=0.5, read_timeout_seconds=0.5, attempts=1)
DRAINER_TAG_WRITES_READS = 2
# The service's group event and the tick's memory of its failing tasks (the sighting rule): both read,
# the memory written, and the group event held when the tick sees one. Small items, one short attempt
# each: a run that cannot read them decides nothing, an unwritten memory only makes the next tick's
# sightings first ones, and a hold that did not land is written again by the next tick that sees it.
GROUP_RECORD_CALL = AwsCallBudget(
    "dynamodb", connect_timeout_seconds=0.5, read_timeout_seconds=0.5, attempts=1
)
DRAINER_GROUP_RECORD_CALLS = 4
# The drainer's Logs Insights queries in one run: the tick's per-task reach, statistics, job
# sightings, a suspect worker's TTS outcomes.
DRAINER_QUERIES = 4


def drainer_notification_seconds() -> float:
    """Its notice markers, its outbox, then the notification."""
    return (
        DRAINER_NOTICE_MARKERS * NOTICE_MARKER_WRITE.worst_case_seconds
        + DRAINER_OUTBOX_CALLS * LEDGER_CALL.worst_case_seconds
        + NOTIFICATION_BUDGET_SECONDS
    )


def drainer_seconds_needed(insights_timeout_seconds: float, ecs_request_timeout_seconds: float) -> float:
    """Kill switch, the VAD alarm's state, credentials, its Logs Insights queries, its open intents,
    recent tag writes and group records, one step, the action events, the notice markers, the outbox
    and the notification, the report."""
    return (
        KILL_SWITCH_READ.worst_case_seconds
        + ALARM_STATE_READ.worst_case_seconds
        + SECRET_READ.worst_case_seconds
        + DRAINER_QUERIES * insights_timeout_seconds
        + DRAINER_JOURNAL_READS * LEDGER_CALL.worst_case_seconds
        + DRAINER_TAG_WRITES_READS * TAG_WRITES_READ.worst_case_seconds
        + DRAINER_GROUP_RECORD_CALLS * GROUP_RECORD_CALL.worst_case_seconds
        + drainer_step_seconds(ecs_request_timeout_seconds)
        + ANNOUNCE_SECONDS
        + drainer_notification_seconds()
        + REPORT_MARGIN_SECONDS
    )


# A drill's calls on its task: the running tasks, the marker's write and removal (the same tag twice
# is one tag: a lost reply is retried); each poll of the record: up to DRILL_RECORD_PAGES_PER_POLL
# pages of the answering function's reports (one attempt: a poll missed), one Query of the ledger.
DRILL_TASKS_READ = AwsCallBudget("ecs", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=2)
DRILL_TAG_CALL = AwsCallBudget("ecs", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=3)
DRILL_RECORD_READ = AwsCallBudget("logs", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=1)
DRILL_RECORD_PAGES_PER_POLL = 3
DRILL_POLL_SECONDS = (
    DRILL_RECORD_PAGES_PER_POLL * DRILL_RECORD_READ.worst_case_seconds + LEDGER_CALL.worst_case_seconds
)
LAMBDA_MAX_TIMEOUT_SECONDS = 900


def scheduled_drill_seconds_needed(minutes: int) -> float:
    """Its own switch and the drilled service's two, the running tasks, the marker, the watch (its
    minutes and the last poll; a sleep is cut to fit), the marker's removal, drill-start and
    drill-verdict (one put each), the report's action events, the notification, the report."""
    return (
        3 * KILL_SWITCH_READ.worst_case_seconds
        + 2 * DRILL_TASKS_READ.worst_case_seconds
        + 2 * DRILL_TAG_CALL.worst_case_seconds
        + 60 * minutes
        + DRILL_POLL_SECONDS
        + 2 * ACTION_EVENTS_PUT.worst_case_seconds
        + ANNOUNCE_SECONDS
        + NOTIFICATION_BUDGET_SECONDS
        + REPORT_MARGIN_SECONDS
    )
