"""The replay of the whole loop on the shipped incident fixture: the functions' own code against a
world simulated from the log, and the counterfactual it derives. Facts about the log are read here
from the raw export, independently of the replay's own parsing."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli.replay import main, replay
from livekit_fleet_remediation.offline.replay_model import TIMELINE_ACTIONS, ReplayResult
from tools import make_incident_fixture

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CDK_JSON = REPO / "examples" / "standalone" / "environments.json"
ACTIONS = set(TIMELINE_ACTIONS)


def _raw_lines(path: Path) -> list[tuple[str, datetime, dict[str, Any]]]:
    rows = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        at = datetime.fromtimestamp(event["timestamp"] / 1000, tz=UTC)
        rows.append((event["logStreamName"], at, json.loads(event["message"])))
    return rows


@pytest.fixture(scope="module")
def log_facts() -> dict[str, Any]:
    """From the raw export: each job's worker, job-request time and room, and which jobs failed
    (responses but never a first audio frame)."""
    requests: dict[str, tuple[str, datetime, str]] = {}
    responses: dict[str, int] = defaultdict(int)
    frames: dict[str, int] = defaultdict(int)
    for stream, at, record in _raw_lines(FIXTURE):
        job = record.get("job_id")
        if record.get("message") == "received job request":
            requests[job] = (stream.rsplit("/", 1)[-1], at, record["room"])
        responses[job] += record.get("message") == "agent_response_started"
        frames[job] += record.get("message") == "tts_node_first_audio_frame"
    failed = {job for job in requests if responses[job] and not frames[job]}
    return {"requests": requests, "failed": failed}


@pytest.fixture(scope="module")
def incident() -> ReplayResult:
    return replay(FIXTURE, "prod", CDK_JSON)


def _at(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_the_zombie_is_reaped_before_the_first_failing_lesson(incident: ReplayResult, log_facts) -> None:  # type: ignore[no-untyped-def]
    zombie_worker, zombie_requested, zombie_room = log_facts["requests"][make_incident_fixture.ZOMBIE_JOB]
    reaps = [a for a in incident.actions if a.action == "delete-room"]
    assert [(a.function, a.target) for a in reaps] == [("zombie_reaper", zombie_room)]
    first_failure = min(log_facts["requests"][job][1] for job in log_facts["failed"])
    assert zombie_requested < reaps[0].at < first_failure
    assert "schedule" in reaps[0].reason
    assert zombie_worker == make_incident_fixture.BAD_TASK


def test_the_bad_worker_is_cordoned_by_a_tick_during_the_vad_alarm_and_named_by_the_responder(
    incident: ReplayResult,
) -> None:
    cordons = [a for a in incident.actions if a.action == "cordon"]
    assert [(a.function, a.target) for a in cordons] == [("worker_drainer", make_incident_fixture.BAD_TASK)]
    # The VAD ALARM transitions came while the worker was under the attribution's rate; a reconcile
    # tick during the ALARM attributed it once it crossed the rate.
    vad_alarms = [
        a.at for a in incident.alarms if a.alarm.endswith("vad-slow-inference") and a.state == "ALARM"
    ]
    assert vad_alarms
    assert vad_alarms[-1] < cordons[0].at
    assert cordons[0].reason.startswith("schedule: degraded")
    verdicts = [v for v in incident.verdicts if v.concentrated]
    assert verdicts
    assert verdicts[0].suspect == make_incident_fixture.BAD_TASK
    assert verdicts[0].p_value is not None
    assert verdicts[0].p_value < 0.05
    assert cordons[0].at <= verdicts[0].at
    # Drained (the zombie's room is already gone) and stopped: the worker takes no more lessons.
    stops = [a for a in incident.actions if a.action == "stop"]
    assert [a.target for a in stops] == [make_incident_fixture.BAD_TASK]
    assert stops[0].at >= cordons[0].at


def test_every_spared_lesson_failed_in_the_log_and_started_after_the_cordon(  # type: ignore[no-untyped-def]
    incident: ReplayResult, log_facts
) -> None:
    outcome = incident.lessons
    assert outcome is not None
    cordoned = next(a.at for a in incident.actions if a.action == "cordon")
    assert len(outcome.failed) == len(log_facts["failed"]) == make_incident_fixture.VICTIMS
    assert outcome.total == len(log_facts["requests"])
    spared = [lesson.job_id for lesson in outcome.spared]
    assert spared
    for job in spared:
        worker, requested, _ = log_facts["requests"][job]
        assert job in log_facts["failed"]
        assert worker == make_incident_fixture.BAD_TASK
        assert requested > cordoned
    # Conservative: every failed lesson that reached the worker before the cordon still fails.
    before = {job for job in log_facts["failed"] if log_facts["requests"][job][1] < cordoned}
    assert before
    assert before.isdisjoint(spared)
    assert outcome.failed_after_remediation == len(before) == len(outcome.failed) - len(spared)


def test_the_alarms_are_routed_as_the_stack_wires_them(incident: ReplayResult) -> None:
    by_trigger: dict[str, set[str]] = defaultdict(set)
    for invocation in incident.invocations:
        by_trigger[invocation.trigger].add(invocation.function)
    assert by_trigger["livekit-prod-agents-vad-slow-inference ALARM"] == {"zombie_reaper", "worker_drainer"}
    assert "livekit-prod-agents-vad-slow-inference OK" not in by_trigger
    assert by_trigger["livekit-prod-agents-tts-reach ALARM"] == {"tts_reach_alarm"}
    assert by_trigger["suspect-worker event"] == {"worker_drainer"}
    assert by_trigger["schedule"] == {"zombie_reaper", "worker_drainer", "tts_reach_alarm"}
    reaper_ticks = [
        i.at for i in incident.invocations if i.trigger == "schedule" and i.function == "zombie_reaper"
    ]
    assert all(at.minute % 5 == 0 for at in reaper_ticks)
    stopped = next(a.at for a in incident.actions if a.action == "stop")
    # Feedback: the stopped task writes no more lines, so the TTS page resolves once, after the stop,
    # and pages no more (the log's later failures on that worker are not replayed).
    tts = [(a.state, a.at) for a in incident.alarms if a.alarm.endswith("tts-reach")]
    assert [state for state, _ in tts] == ["ALARM", "OK"]
    assert tts[1][1] > stopped
    assert by_trigger["livekit-prod-agents-tts-reach OK"] == {"tts_reach_alarm"}
    # Every report is one the function produced itself, and none failed: a suspect-worker event that
    # names a worker the drainer already stopped (its tick stopped it first) is a quiet no-op (the
    # replay's ECS gives the stop's reason, as DescribeTasks does; test_worker_drainer covers that
    # event on moto).
    assert [i.report["errors"] for i in incident.invocations if i.report["status"] != "ok"] == []


def test_the_delays_put_the_cordon_after_the_instant_models_minute(incident: ReplayResult) -> None:
    """The same log under ``--profile none``: the tick cordons at the end of its minute; under the
    service profile the same tick's jitter and queries put it later, in the same minute here."""
    instant = replay(FIXTURE, "prod", CDK_JSON, profile="none")
    (at_once,) = [a.at for a in instant.actions if a.action == "cordon"]
    (delayed,) = [a.at for a in incident.actions if a.action == "cordon"]
    assert at_once.second == 0
    assert at_once.microsecond == 0
    assert at_once < delayed < at_once + timedelta(minutes=1)
    assert instant.delays.startswith("Delays: none")


def test_a_dry_run_changes_nothing_and_spares_nothing() -> None:
    dry = replay(FIXTURE, "prod", CDK_JSON, Mode.DRY_RUN)
    assert dry.lessons is not None
    assert [a for a in dry.actions if a.action != "notify"] == []
    assert dry.lessons.spared == []
    assert dry.lessons.failed_after_remediation == len(dry.lessons.failed)


def test_json_document_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log", str(FIXTURE), "--config", str(CDK_JSON), "--env", "prod", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"delays", "alarms", "verdicts", "actions", "lessons", "out_of_rotation"}
    assert document["delays"].startswith("Delays: profile aws")
    (out,) = document["out_of_rotation"]
    assert out["task"] == make_incident_fixture.BAD_TASK
    assert 0 < out["minutes_after_first_failed_session"] < 10
    _at(out["from"])
    for alarm in document["alarms"]:
        assert set(alarm) == {"alarm", "state", "at"}
        assert alarm["state"] in ("ALARM", "OK")
        _at(alarm["at"])
    for verdict in document["verdicts"]:
        assert set(verdict) == {"at", "concentrated", "suspect", "p_value", "reason"}
        assert isinstance(verdict["concentrated"], bool)
        _at(verdict["at"])
    assert document["actions"]
    for action in document["actions"]:
        assert set(action) == {"at", "function", "action", "target", "reason"}
        assert action["action"] in ACTIONS
        assert action["reason"]
        _at(action["at"])
    lessons = document["lessons"]
    assert set(lessons) == {"total", "failed_in_log", "failed_after_remediation", "spared"}
    assert lessons["failed_after_remediation"] == lessons["failed_in_log"] - len(lessons["spared"])
    assert all(isinstance(job, str) for job in lessons["spared"])


def test_both_export_shapes_replay_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = tmp_path / "events.json"
    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    document.write_text(json.dumps({"events": events, "searchedLogStreams": []}))
    assert main(["--log", str(FIXTURE), "--config", str(CDK_JSON), "--env", "prod", "--json"]) == 0
    from_lines = capsys.readouterr().out
    assert main(["--log", str(document), "--config", str(CDK_JSON), "--env", "prod", "--json"]) == 0
    assert capsys.readouterr().out == from_lines


def test_a_json_array_and_pages_one_per_line_replay_like_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    array, pages = tmp_path / "array.json", tmp_path / "pages.jsonl"
    array.write_text(json.dumps(events))
    half = len(events) // 2
    pages.write_text("\n".join(json.dumps({"events": page}) for page in (events[:half], events[half:])))
    assert main(["--log", str(FIXTURE), "--config", str(CDK_JSON), "--env", "prod", "--json"]) == 0
    from_lines = capsys.readouterr().out
    for log in (array, pages):
        assert main(["--log", str(log), "--config", str(CDK_JSON), "--env", "prod", "--json"]) == 0
        assert capsys.readouterr().out == from_lines


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ('{"events": [', "is not filter-log-events JSON"),
        ('{"timestamp": 1, "message": "{}"}\n{"x": 1}', "event 2 has no string 'message'"),
        ('[{"message": "{}", "timestamp": "yesterday"}]', "event 1: 'timestamp' must be milliseconds"),
        ('{"events": [{"message": "{}", "timestamp": 1}, 7]}', "event 2 is a int, not an object"),
        ("", "holds no JSON log events"),
    ],
)
def test_unreadable_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, expected: str
) -> None:
    log = tmp_path / "events.json"
    if content is not None:
        log.write_text(content)
    assert main(["--log", str(log), "--config", str(CDK_JSON), "--env", "prod"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("replay: error: ")
    assert expected in lines[0]


def test_an_unknown_environment_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log", str(FIXTURE), "--config", str(CDK_JSON), "--env", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "environment 'nowhere' is not in the configuration" in err
