"""A picture of an incident: the replay (``lkfr replay --html out.html``) as one self-contained HTML
page — TTS reach, slow-VAD warnings per worker, the alarms' states, the functions' actions and the
failed lessons on one time axis. No network: the data, the script and the drawing (SVG) are inline.

The page checks itself once drawn: ``<output id="self-check">`` holds a JSON summary of what it drew
(points, series, bands, markers) and any script error, which the page test compares with the replay.
"""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet_remediation.contract.drainer_steps import Step
from fleet_remediation.contract.naming import task_id_from_log_stream
from livekit_fleet_remediation.offline.replay_model import DELETE_ROOM, NOTIFY, TIMELINE_ACTIONS

if TYPE_CHECKING:
    from livekit_fleet_remediation.offline.replay_model import ReplayResult

MINUTE_MS = 60_000
# One colour per lane of the actions panel; every step of the drainer's step table has one (its reap
# shows as the rooms it deleted).
STEP_COLORS: dict[Step, str] = {
    Step.CORDON: "#d35400",
    Step.COMPLETE_CORDON: "#e59866",
    Step.STOP: "#2c3e50",
    Step.UNDO: "#16a085",
    Step.SETTLE_CAPACITY: "#2874a6",
    Step.REVERT_CAPACITY: "#85929e",
}
LANE_COLORS = {
    DELETE_ROOM: "#8e44ad",
    **{step.value: color for step, color in STEP_COLORS.items()},
    NOTIFY: "#7f8c8d",
}


def action_lanes() -> list[dict[str, str]]:
    """The actions panel's lanes, in the timeline's order, each with its colour."""
    return [{"action": action, "color": LANE_COLORS[action]} for action in TIMELINE_ACTIONS]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _alarm_bands(result: ReplayResult) -> list[dict[str, Any]]:
    bands: list[dict[str, Any]] = []
    open_since: dict[str, datetime] = {}
    for change in result.alarms:
        if change.state == "ALARM":
            open_since[change.alarm] = change.at
        elif change.alarm in open_since:
            bands.append(
                {"alarm": change.alarm, "from": _ms(open_since.pop(change.alarm)), "to": _ms(change.at)}
            )
    end = datetime.fromtimestamp(
        (result.series["start"] + result.series["minutes"] * MINUTE_MS) / 1000, tz=UTC
    )
    bands += [{"alarm": alarm, "from": _ms(since), "to": _ms(end)} for alarm, since in open_since.items()]
    return bands


def _alarm_label(name: str) -> str:
    if "vad" in name:
        return "VAD alarm"
    if "tts" in name:
        return "TTS alarm"
    return name


def incident_title(result: ReplayResult) -> str:
    """What happened, when and to which worker: the incident's name, not the file's."""
    failed = len(result.lessons.failed) if result.lessons else 0
    suspects = [v.suspect for v in result.verdicts if v.concentrated and v.suspect]
    where = f" on worker {task_id_from_log_stream(suspects[0])[:8]}" if suspects else ""
    return (
        f"Incident of {result.start:%Y-%m-%d}, {result.start:%H:%M}-{result.end:%H:%M} UTC: "
        f"{failed} sessions failed{where}"
    )


def _rotation_spans(result: ReplayResult, end_ms: int) -> list[dict[str, Any]]:
    return [
        {"worker": worker, "from": _ms(start), "to": end_ms if end is None else _ms(end)}
        for worker, spans in result.out_of_rotation.items()
        for start, end in spans
    ]


def page_data(result: ReplayResult) -> dict[str, Any]:
    assert result.lessons is not None
    spared = {lesson.job_id for lesson in result.lessons.spared}
    alarm_names = sorted({change.alarm for change in result.alarms}, key=lambda name: "vad" not in name)
    end_ms = result.series["start"] + result.series["minutes"] * MINUTE_MS
    return {
        "title": incident_title(result),
        "subtitle": (
            f"Replay of {Path(result.log).name}: environment {result.env_name}, kill switch "
            f"{result.mode.value} (simulated); {result.events} events on {result.streams} log streams"
        ),
        "series": result.series,
        "alarms": [{"name": name, "label": _alarm_label(name)} for name in alarm_names],
        "bands": _alarm_bands(result),
        "lanes": action_lanes(),
        "actions": [
            {
                "at": _ms(a.at),
                "function": a.function,
                "action": a.action,
                "target": a.target,
                "reason": a.reason,
            }
            for a in result.actions
        ],
        "verdicts": [
            {"at": _ms(v.at), "concentrated": v.concentrated, "suspect": v.suspect, "reason": v.reason}
            for v in result.verdicts
        ],
        "out_of_rotation": _rotation_spans(result, end_ms),
        "lessons": [
            {
                "job": lesson.job_id,
                "at": _ms(lesson.started),
                "worker": task_id_from_log_stream(lesson.stream),
                "spared": lesson.job_id in spared,
            }
            for lesson in result.lessons.failed
            if lesson.started is not None
        ],
        "summary": {
            "total": result.lessons.total,
            "failed_in_log": len(result.lessons.failed),
            "failed_after_remediation": result.lessons.failed_after_remediation,
            "spared": len(result.lessons.spared),
        },
    }


def render_page(result: ReplayResult) -> str:
    data = json.dumps(page_data(result), separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(incident_title(result))
    return PAGE.replace("__TITLE__", title).replace("__DATA__", data)


# The page: HTML, CSS and the script that draws it from the embedded data.
PAGE = (Path(__file__).parent / "replay_page.html").read_text(encoding="utf-8")
