"""A picture of an incident: the replay (``tools.replay --html out.html``) as one self-contained HTML
page — TTS reach, slow-VAD warnings per worker, the alarms' states, the functions' actions and the
failed lessons on one time axis. No network: the data, the script and the drawing (SVG) are inline.

The page checks itself once drawn: ``<output id="self-check">`` holds a JSON summary of what it drew
(points, series, bands, markers) and any script error, which the page test compares with the replay.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from devkit.log_export import LogEvent
from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.contract.signals import SignalCatalog

if TYPE_CHECKING:
    from tools.replay import ReplayResult

MINUTE_MS = 60_000


def minute_series(
    events: Sequence[LogEvent], catalog: SignalCatalog, start: datetime, minutes: int
) -> dict[str, Any]:
    """Per minute from ``start``: responses started, first audio frames, and slow-VAD warnings per log
    stream (only streams that logged any)."""
    responses, frames = [0] * minutes, [0] * minutes
    vad: dict[str, list[int]] = {}
    for event in events:
        index = int((event.at - start).total_seconds() // 60)
        if not 0 <= index < minutes:
            continue
        responses[index] += catalog.response_started.matches(event.record)
        frames[index] += catalog.first_audio_frame.matches(event.record)
        if catalog.slow_vad.matches(event.record):
            vad.setdefault(event.stream, [0] * minutes)[index] += 1
    ranked = sorted(vad.items(), key=lambda item: -sum(item[1]))
    return {
        "start": _ms(start),
        "minutes": minutes,
        "responses": responses,
        "frames": frames,
        "vad": [{"worker": task_id_from_log_stream(stream), "counts": counts} for stream, counts in ranked],
    }


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
        return "TTS-reach alarm"
    return name


def page_data(result: ReplayResult) -> dict[str, Any]:
    assert result.lessons is not None
    spared = {lesson.job_id for lesson in result.lessons.spared}
    alarm_names = sorted({change.alarm for change in result.alarms}, key=lambda name: "vad" not in name)
    end_ms = result.series["start"] + result.series["minutes"] * MINUTE_MS
    return {
        "title": f"Replay of {result.log}",
        "subtitle": (
            f"environment {result.env_name}, kill switch {result.mode.value} (simulated); "
            f"{result.events} events on {result.streams} log streams"
        ),
        "series": result.series,
        "alarms": [{"name": name, "label": _alarm_label(name)} for name in alarm_names],
        "bands": _alarm_bands(result),
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
        "out_of_rotation": [
            {"worker": worker, "from": _ms(start), "to": end_ms if end is None else _ms(end)}
            for worker, spans in result.out_of_rotation.items()
            for start, end in spans
        ],
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
    title = html.escape(f"Replay of {result.log}")
    return PAGE.replace("__TITLE__", title).replace("__DATA__", data)


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<script>
  window.pageErrors = [];
  window.addEventListener("error", function (e) { window.pageErrors.push(String(e.message)); });
</script>
<style>
  body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d2330;
         background: #fff; }
  h1 { font-size: 20px; margin: 0 0 2px; }
  .sub { color: #5a6270; margin: 0 0 12px; }
  .figure { border: 1px solid #d9dde4; border-radius: 6px; padding: 8px; }
  svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
  svg .panel-title { font-weight: 600; font-size: 13px; }
  svg .axis text, svg .muted { fill: #5a6270; }
  .legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 8px 4px 0; color: #333; }
  .legend span::before { content: ""; display: inline-block; width: 12px; height: 12px; margin-right: 5px;
                         vertical-align: -2px; background: var(--c); border-radius: 2px; }
  .summary { font-size: 15px; margin: 14px 0; }
  .summary b { font-size: 17px; }
  table { border-collapse: collapse; width: 100%; margin-top: 8px; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e6e8ec; vertical-align: top; }
  th { background: #f4f5f7; }
  td.t { white-space: nowrap; font-variant-numeric: tabular-nums; }
  output#self-check { display: none; }
</style>
</head>
<body>
<h1 id="title"></h1>
<p class="sub" id="subtitle"></p>
<p class="summary" id="summary"></p>
<div class="figure"><svg id="chart" role="img" aria-label="incident timeline"></svg>
<div class="legend" id="legend"></div></div>
<h2>Timeline</h2>
<table id="timeline"><thead><tr><th>time (UTC)</th><th>function</th><th>what</th><th>target</th>
<th>why</th></tr></thead><tbody></tbody></table>
<output id="self-check"></output>
<script id="replay-data" type="application/json">__DATA__</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("replay-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var s = data.series;
  var MIN = 60000;
  var t0 = s.start, t1 = s.start + s.minutes * MIN;
  var W = 1200, left = 150, right = 24, plotW = W - left - right;
  var ACTION_COLORS = {"delete-room": "#8e44ad", "cordon": "#d35400", "stop-task": "#c0392b",
                       "undo": "#16a085", "notify": "#7f8c8d"};
  var WORKER_COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                       "#bcbd22", "#7f7f7f", "#ff7f0e"];
  var drawn = {reachPoints: 0, vadSeries: 0, bands: 0, actionMarkers: 0, verdictMarkers: 0,
               lessonMarkers: 0, rows: 0};

  function el(name, attrs, parent, text) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) { node.setAttribute(key, attrs[key]); }
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function x(ms) { return left + (ms - t0) / (t1 - t0) * plotW; }
  function hhmm(ms) { return new Date(ms).toISOString().substr(11, 5); }
  function title(node, text) { el("title", {}, node, text); }

  var svg = document.getElementById("chart");
  var y = 10;
  var panels = [];
  function panel(name, height) {
    var g = el("g", {"class": "panel"}, svg);
    if (name) { el("text", {x: 8, y: y + 14, "class": "panel-title"}, g, name); }
    el("rect", {x: left, y: y, width: plotW, height: height, fill: "#fafbfc", stroke: "#e1e4e8"}, g);
    var p = {g: g, top: y, height: height};
    panels.push(p);
    y += height + 14;
    return p;
  }
  function yTicks(p, max, ticks, fmt) {
    ticks.forEach(function (v) {
      var ty = p.top + p.height - v / max * p.height;
      el("line", {x1: left, x2: left + plotW, y1: ty, y2: ty, stroke: "#e6e8ec"}, p.g);
      el("text", {x: left - 6, y: ty + 4, "text-anchor": "end", "class": "muted"}, p.g, fmt(v));
    });
  }
  function polyline(p, values, max, color, width, label) {
    var points = [];
    values.forEach(function (v, i) {
      if (v === null) { return; }
      var px = x(t0 + (i + 0.5) * MIN), py = p.top + p.height - Math.min(v, max) / max * p.height;
      points.push(px.toFixed(1) + "," + py.toFixed(1));
    });
    var line = el("polyline", {points: points.join(" "), fill: "none", stroke: color,
                               "stroke-width": width, "stroke-linejoin": "round"}, p.g);
    title(line, label);
    return points.length;
  }

  // 1. TTS reach per minute (first audio frames / responses); no responses: no point.
  var reachPanel = panel("TTS reach / min", 120);
  yTicks(reachPanel, 1.2, [0, 0.5, 1], function (v) { return (v * 100).toFixed(0) + " %"; });
  var reach = s.responses.map(function (r, i) { return r ? s.frames[i] / r : null; });
  drawn.reachPoints = polyline(reachPanel, reach, 1.2, "#1f77b4", 2, "TTS reach");
  reach.forEach(function (v, i) {
    if (v === null) { return; }
    var cy = reachPanel.top + reachPanel.height - Math.min(v, 1.2) / 1.2 * reachPanel.height;
    var c = el("circle", {cx: x(t0 + (i + 0.5) * MIN), cy: cy, r: 2, fill: "#1f77b4", "class": "reach-point"},
               reachPanel.g);
    title(c, hhmm(t0 + i * MIN) + " reach " + (v * 100).toFixed(0) + " % of " + s.responses[i] + " started");
  });

  // 2. Slow-VAD warnings per minute, one line per worker.
  var vadPanel = panel("Slow VAD / min", 140);
  el("text", {x: 8, y: vadPanel.top + 30, "class": "muted"}, vadPanel.g, "per worker");
  var vadMax = 1;
  s.vad.forEach(function (w) { w.counts.forEach(function (c) { vadMax = Math.max(vadMax, c); }); });
  vadMax = Math.ceil(vadMax / 5) * 5;
  yTicks(vadPanel, vadMax, [0, vadMax / 2, vadMax], function (v) { return String(v); });
  var legend = document.getElementById("legend");
  function legendItem(color, text) {
    var item = document.createElement("span");
    item.style.setProperty("--c", color);
    item.textContent = text;
    legend.appendChild(item);
  }
  legendItem("#1f77b4", "TTS reach");
  s.vad.forEach(function (w, i) {
    var color = WORKER_COLORS[i % WORKER_COLORS.length];
    var n = polyline(vadPanel, w.counts, vadMax, color, i === 0 ? 2.2 : 1.4, "worker " + w.worker);
    if (n) { drawn.vadSeries += 1; }
    legendItem(color, "slow VAD on " + w.worker.substr(0, 8));
  });

  // 3. Alarm states: one lane per alarm, red while in ALARM.
  function laneLabel(p, lane, text) {
    el("text", {x: left - 6, y: p.top + lane * 22 + 15, "text-anchor": "end", "class": "muted"}, p.g, text);
  }
  var alarmPanel = panel("", 22 * Math.max(1, data.alarms.length));
  data.alarms.forEach(function (alarm, lane) {
    var top = alarmPanel.top + lane * 22;
    laneLabel(alarmPanel, lane, alarm.label);
    data.bands.filter(function (b) { return b.alarm === alarm.name; }).forEach(function (b) {
      var band = el("rect", {x: x(b.from), y: top + 3, width: Math.max(2, x(b.to) - x(b.from)), height: 16,
                             fill: "#e74c3c", "fill-opacity": 0.8, "class": "alarm-band"}, alarmPanel.g);
      title(band, alarm.name + " ALARM " + hhmm(b.from) + "-" + hhmm(b.to));
      drawn.bands += 1;
    });
  });
  legendItem("#e74c3c", "alarm in ALARM");

  // 4. Actions and verdicts, one lane each; a label only where it does not run into the previous one.
  var LANES = ["delete-room", "cordon", "stop-task", "undo", "verdict", "notify"];
  var actPanel = panel("", 22 * LANES.length);
  var labelEnds = {};
  function marker(lane, at, shape, color, tip, label, cls) {
    var cx = x(at), cy = actPanel.top + LANES.indexOf(lane) * 22 + 11;
    var node = shape === "ring"
      ? el("circle", {cx: cx, cy: cy, r: 6, fill: "#fff", stroke: color, "stroke-width": 3, "class": cls},
           actPanel.g)
      : el("path", {d: "M" + cx + "," + (cy - 7) + " l7,7 l-7,7 l-7,-7 z", fill: color, "class": cls},
           actPanel.g);
    title(node, tip);
    if (label && (labelEnds[lane] === undefined || cx > labelEnds[lane])) {
      var text = el("text", {x: cx + 10, y: cy + 4}, actPanel.g, label);
      labelEnds[lane] = cx + 14 + text.getComputedTextLength();
    }
    return node;
  }
  LANES.forEach(function (lane, i) { laneLabel(actPanel, i, lane === "verdict" ? "responder" : lane); });
  data.actions.forEach(function (a) {
    var color = ACTION_COLORS[a.action] || "#333";
    var tip = hhmm(a.at) + " " + a.function + " " + a.action + " " + a.target + ": " + a.reason;
    var label = a.action === "notify" ? "" : hhmm(a.at) + " " + a.target.substr(0, 30);
    marker(a.action, a.at, "diamond", color, tip, label, "action-marker");
    drawn.actionMarkers += 1;
    if (a.action !== "notify") {
      var bottom = actPanel.top + LANES.indexOf(a.action) * 22 + 4;
      el("line", {x1: x(a.at), x2: x(a.at), y1: panels[0].top, y2: bottom, stroke: color,
                  "stroke-dasharray": "4 3"}, svg);
    }
  });
  data.verdicts.forEach(function (v) {
    var color = v.concentrated ? "#d35400" : "#555";
    var label = hhmm(v.at) + " " + v.reason.split(":")[0] + (v.suspect ? ": " + v.suspect.substr(0, 8) : "");
    var tip = hhmm(v.at) + " tts_reach_alarm: " + v.reason;
    marker("verdict", v.at, "ring", color, tip, label, "verdict-marker");
    drawn.verdictMarkers += 1;
  });
  Object.keys(ACTION_COLORS).forEach(function (a) { legendItem(ACTION_COLORS[a], a); });
  legendItem("#d35400", "responder verdict (ring)");

  // 5. Failed lessons at their job request: red failed, green spared; shaded while their worker was
  // out of rotation (cordoned).
  var lessonPanel = panel("Failed sessions", 34);
  data.out_of_rotation.forEach(function (span) {
    var shade = el("rect", {x: x(span.from), y: lessonPanel.top, height: lessonPanel.height,
                            width: Math.max(2, x(span.to) - x(span.from)), fill: "#27ae60",
                            "fill-opacity": 0.12}, lessonPanel.g);
    title(shade, span.worker + " out of rotation from " + hhmm(span.from));
  });
  data.lessons.forEach(function (l) {
    var dot = el("circle", {cx: x(l.at), cy: lessonPanel.top + 17, r: 5, "fill-opacity": 0.9,
                            fill: l.spared ? "#27ae60" : "#c0392b", "class": "lesson-marker"},
                 lessonPanel.g);
    title(dot, hhmm(l.at) + " " + l.job + " on " + l.worker + (l.spared ? ": spared" : ": failed"));
    drawn.lessonMarkers += 1;
  });
  legendItem("#c0392b", "failed session");
  legendItem("#27ae60", "spared session (worker out of rotation)");

  // The time axis, every 15 or 30 minutes.
  var axis = el("g", {"class": "axis"}, svg);
  var step = (t1 - t0) > 4 * 3600000 ? 30 * MIN : 15 * MIN;
  for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    el("line", {x1: x(t), x2: x(t), y1: 10, y2: y - 8, stroke: "#d0d4da", "stroke-width": 0.6}, axis);
    el("text", {x: x(t), y: y + 6, "text-anchor": "middle"}, axis, hhmm(t));
  }
  el("text", {x: left + plotW, y: y + 22, "text-anchor": "end", "class": "muted"}, axis, "UTC");
  svg.setAttribute("viewBox", "0 0 " + W + " " + (y + 30));
  svg.setAttribute("width", "100%");

  document.getElementById("title").textContent = data.title;
  document.getElementById("subtitle").textContent = data.subtitle;
  var sm = data.summary;
  document.getElementById("summary").innerHTML = "";
  [["", sm.failed_in_log, " sessions failed in the log; "], ["", sm.failed_after_remediation,
    " would still have failed with remediation; "], ["", sm.spared, " spared"]].forEach(function (part) {
    var b = document.createElement("b");
    b.textContent = String(part[1]);
    document.getElementById("summary").appendChild(b);
    document.getElementById("summary").appendChild(document.createTextNode(part[2]));
  });
  document.getElementById("summary").appendChild(document.createTextNode(
    " (" + sm.total + " jobs; spared = started on a worker after it was cordoned)."));

  var body = document.querySelector("#timeline tbody");
  var rows = data.bands.map(function (b) { return [b.from, 0, "", "ALARM", b.alarm, "until " + hhmm(b.to)]; })
    .concat(data.verdicts.map(function (v) {
      return [v.at, 1, "tts_reach_alarm", "verdict", v.suspect || "", v.reason];
    }))
    .concat(data.actions.map(function (a) {
      return [a.at, a.action === "notify" ? 3 : 2, a.function, a.action, a.target, a.reason];
    }));
  rows.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
  rows.forEach(function (r) {
    var tr = document.createElement("tr");
    [hhmm(r[0]), r[2], r[3], r[4], r[5]].forEach(function (v, i) {
      var td = document.createElement("td");
      if (i === 0) { td.className = "t"; }
      td.textContent = v;
      tr.appendChild(td);
    });
    body.appendChild(tr);
    drawn.rows += 1;
  });

  var check = document.getElementById("self-check");
  drawn.errors = window.pageErrors;
  drawn.ok = window.pageErrors.length === 0;
  check.textContent = JSON.stringify(drawn);
  check.setAttribute("data-ok", String(drawn.ok));
})();
</script>
</body>
</html>
"""
