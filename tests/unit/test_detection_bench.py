"""The detection benchmark's harness on two short seeded runs: what it measures is what the deployed
alarms, the drainer's attribution and the responder would do (no timing is asserted)."""

from __future__ import annotations

from bench.detection import drains, false_pages_per_day, latency, run, transitions_during, vad_attribution
from fleet_remediation.contract.detection import DetectionConfig


def test_a_slow_but_healthy_tts_day_pages_with_the_old_alarm_only() -> None:
    result = run("slow-tts", 35, 1440, seed=11, config=DetectionConfig())
    assert false_pages_per_day(result, "tts_old") >= 1  # the complaint, reproduced
    for alarm in ("tts_new", "tts_new_no_emitter", "vad"):
        assert false_pages_per_day(result, alarm) == 0
    assert all(not t.drained for t in result.transitions if t.alarm in ("tts_new", "vad"))


def test_a_cpu_starved_worker_is_detected_attributed_and_drained_alone() -> None:
    result = run("cpu-starved", 250, 290, seed=1, config=DetectionConfig())
    new = latency(result, "tts_new")
    assert new is not None
    assert 0 < new <= 3
    vad = latency(result, "vad")
    assert vad is not None
    assert vad < 0  # the backlog shows before the first lesson fails
    verdicts = [vad_attribution(result, t) for t in transitions_during(result, "vad")]
    assert "wrong" not in verdicts
    # The worker is cordoned by the drainer's attribution, at the VAD page or at a tick during it.
    bad = result.bad_task_id
    assert any(t.drained == {bad} for t in result.transitions if t.alarm == "vad")
    assert drains([result], ("tts_new", "vad")) == (1, 0, 0)
