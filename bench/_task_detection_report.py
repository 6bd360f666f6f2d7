"""The fleet-scale detection benchmark's figures (``bench._task_detection`` runs the fleets): one JSON
object per size and family, the terms they use, and the monthly cost of each option."""

from __future__ import annotations

import io
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench._task_detection import (
    ALARM_PER_MONTH,
    CI_PER_MILLION_EVENTS,
    CI_PER_RULE,
    FAILURE_RUN_MINUTES,
    INSIGHTS_PER_GB,
    MINUTES_PER_MONTH,
    OPTIONS,
    ROW_LIMITS,
    TERMS,
    Run,
    run_family,
)
from devkit.fleet_counts import HEALTHY
from devkit.fleet_groups import GROUP_FAMILIES
from devkit.traffic import FAILURE_FAMILIES
from fleet_remediation.adapters.windowed_insights import DEFAULT_MAX_QUERIES, planned_pieces
from fleet_remediation.contract.task_reach import TaskReachSettings
from livekit_fleet_remediation.offline.delays import DelayProfile
from worker_drainer.read.task_reach_query import MAX_TASK_ROWS


# --- figures ---------------------------------------------------------------------------------------
def line_bytes() -> float:
    """Mean size of the agents' JSON lines, measured from ``devkit.traffic``'s export (the formatter
    livekit-agents itself uses)."""
    from devkit.traffic import TrafficSimulation, export, scenario

    buffer = io.StringIO()
    count = export(TrafficSimulation(scenario("steady", 35, 20, 1)), buffer)
    return sum(len(json.loads(line)["message"]) for line in buffer.getvalue().splitlines()) / count


def costs(runs: Sequence[Run], settings: TaskReachSettings, bytes_per_line: float) -> dict[str, float]:
    minutes = sum(r.spec.minutes for r in runs)
    lines = sum(r.lines for r in runs) / minutes
    matched = sum(r.responses + r.timeouts for r in runs) / minutes
    scanned_gb = settings.window_minutes * lines * bytes_per_line * MINUTES_PER_MONTH / 1e9
    return {
        "a_tick": round(scanned_gb * INSIGHTS_PER_GB, 2),
        "b_contributors": round(
            2 * CI_PER_RULE + matched * MINUTES_PER_MONTH / 1e6 * CI_PER_MILLION_EVENTS + ALARM_PER_MONTH, 2
        ),
        "c_self": 0.0,
    }


def delay_figures(runs: Sequence[Run], option: str) -> dict[str, Any]:
    """What the delays added to the right cordons, in minutes, [median, worst] over the runs: in all
    (from the end of the minute whose data decided) and by cause, the biggest first."""
    waits = [
        r.options[option].waits[bad]
        for r in runs
        if (bad := r.truth.bad_task) is not None and bad in r.options[option].waits
    ]
    if not waits:
        return {}
    added = [sum(v for cause, v in w.items() if cause != "minute_end") / 60 for w in waits]
    causes = sorted({cause for w in waits for cause in w if cause != "minute_end"})
    by_cause = {cause: _median_worst([w.get(cause, 0.0) / 60 for w in waits]) for cause in causes}
    return {
        "delay_minutes": _median_worst(added),
        "delay_by_cause_minutes": dict(sorted(by_cause.items(), key=lambda item: -item[1][0])),
    }


def _median_worst(values: Sequence[float]) -> list[float]:
    return [round(statistics.median(values), 2), round(max(values), 2)]


def option_figures(runs: Sequence[Run], option: str) -> dict[str, Any]:
    latencies: list[float | None] = []
    hurt: list[int] = []
    right = healthy = fleet_wide = 0
    for r in runs:
        cordons = r.options[option].cordons
        truth = r.truth
        if truth.fleet_wide:
            fleet_wide += len(cordons)
            continue
        bad = truth.bad_task
        healthy += len(set(cordons) - {bad})
        if bad is None or truth.onset_seconds is None:
            continue
        right += bad in cordons
        cordoned_at = cordons.get(bad, float("inf"))
        hurt.append(sum(at < cordoned_at for at in truth.hurt_calls))
        latencies.append((cordons[bad] - truth.onset_seconds) / 60 if bad in cordons else None)
    found = [v for v in latencies if v is not None]
    figures: dict[str, Any] = {"cordons_on_healthy": healthy}
    if runs[0].truth.fleet_wide:
        figures["cordons_in_fleet_wide_event"] = fleet_wide
    elif latencies:
        figures |= {
            "latency_minutes": [None if v is None else round(v, 2) for v in latencies],
            "median_latency_minutes": round(statistics.median(found), 2) if found else None,
            "worst_latency_minutes": round(max(found), 2) if len(found) == len(latencies) else None,
            "right_task_cordoned": f"{right} of {len(latencies)}",
            "calls_hurt_before_cordon": hurt,
            **delay_figures(runs, option),
        }
    return figures


def capped_decisions(runs: Sequence[Run]) -> int:
    """Cordons decided on a per-task result at its row limit (the only result the options decide on)."""
    return sum(
        len(r.options[o].cordons) for r in runs for o in OPTIONS if r.rows["a_per_task"] >= MAX_TASK_ROWS
    )


def responder_figures(runs: Sequence[Run]) -> dict[str, Any]:
    """The responder's own look at each page of the TTS-reach alarm: which read it took and its verdict."""
    reads: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    for run in runs:
        reads.update(run.responder.reads)
        verdicts.update(run.responder.verdicts)
    return {"pages": sum(reads.values()), "reads": dict(reads), "verdicts": dict(verdicts)}


def refused_outcome(query: str, tasks: int) -> str:
    """What a read refused at its row limit leaves: the responder turns to one row per task (its
    verdict is the tick's, ``tts_reach_alarm.per_task``); the drainer's reads stay unknown."""
    if query == "responder_jobs":
        return f"per-job read refused; the responder reads {tasks} per-task rows (its verdicts: responder)"
    return f"refused: more than {DEFAULT_MAX_QUERIES} queries; unknown, no decision"


def summary(runs: Sequence[Run], settings: TaskReachSettings, bytes_per_line: float) -> dict[str, Any]:
    spec = runs[0].spec
    days = sum(r.spec.minutes for r in runs) / 1440
    pages = {name: sum(r.pages[name] for r in runs) for name in runs[0].pages}
    rows = {}
    for name, limit in ROW_LIMITS.items():
        most = max(r.rows[name] for r in runs)
        pieces = planned_pieces(most, limit)
        rows[name] = {
            "rows": most,
            "limit": limit,
            "pieces": pieces,
            "outcome": "read whole in pieces"
            if pieces <= DEFAULT_MAX_QUERIES
            else refused_outcome(name, spec.tasks),
        }
    healthy = spec.family in HEALTHY
    return {
        "tasks": spec.tasks,
        "responses_per_minute": spec.responses_per_minute,
        "family": spec.family,
        "seeds": len(runs),
        "simulated_days": round(days, 3),
        "sweep": [
            {
                k: v
                for k, v in r.spec.describe().items()
                if k not in ("family", "tasks", "responses_per_minute")
            }
            for r in runs
        ],
        "responses_per_minute_measured": round(sum(r.responses for r in runs) / (days * 1440)),
        ("false_pages_per_day" if healthy else "pages_in_run"): {
            name: round(count / days, 3) if healthy else count for name, count in pages.items()
        },
        "options": {option: option_figures(runs, option) for option in OPTIONS},
        "rows": rows,
        "responder": responder_figures(runs),
        "decisions_on_capped_results": capped_decisions(runs),
        "cost_per_month_usd": costs(runs, settings, bytes_per_line),
        "seconds": round(sum(r.seconds for r in runs), 2),
    }


def main(
    tasks: Sequence[int],
    volumes: Sequence[float],
    days: float,
    seeds: int,
    as_json: bool,
    profile: DelayProfile,
) -> None:
    started = time.perf_counter()
    settings = TaskReachSettings()
    bytes_per_line = line_bytes()
    print(
        json.dumps(
            {
                "terms": TERMS,
                "per_task_test": settings.describe(),
                "bytes_per_line": round(bytes_per_line),
                "delays": profile.describe(),
            }
        )
    )
    for size in tasks:
        for volume in volumes:
            for family in HEALTHY + FAILURE_FAMILIES + GROUP_FAMILIES:
                minutes = round(days * 1440) if family in HEALTHY else FAILURE_RUN_MINUTES
                runs = run_family(family, size, volume, minutes, seeds, profile, bytes_per_line)
                result = summary(runs, settings, bytes_per_line) | {"profile": profile.name}
                print(json.dumps(result) if as_json else text_line(result), flush=True)
    print(
        json.dumps(
            {
                "total_seconds": round(time.perf_counter() - started, 1),
                "cpu_seconds": round(time.process_time(), 1),
            }
        )
    )


def text_line(result: dict[str, Any]) -> str:
    options = result["options"]
    parts = [
        f"{o}: " + ", ".join(f"{k}={v}" for k, v in options[o].items() if k != "latency_minutes")
        for o in OPTIONS
    ]
    return f"{result['tasks']} tasks {result['responses_per_minute']:g}/min {result['family']}: " + "; ".join(
        parts
    )
