"""Render a report for a person at a terminal: what it saw, what it decided, what it did."""

from __future__ import annotations

from typing import Any


def render_report(report: dict[str, Any]) -> str:
    trigger = report.get("trigger") or {}
    lines = [
        f"{report['function']} [{report.get('environment')}]  trigger={trigger.get('kind')}"
        f"({trigger.get('source')})  mode={report.get('mode')}  status={report['status']}",
    ]
    candidates = report["candidates"]
    if candidates:
        width = max(len(c["resource"]) for c in candidates)
        lines.append(f"  {'candidate'.ljust(width)}  {'decision':<9}  reason")
        lines += [f"  {c['resource'].ljust(width)}  {c['decision']:<9}  {c['reason']}" for c in candidates]
    for action in report["actions"]:
        error = f"  [{action['error']['code']}]" if action.get("error") else ""
        reason = action.get("reason", "")  # a done step's empty reason is left out of the report
        lines.append(f"  -> {action['action']} {action['resource']}: {action['outcome']} {reason}{error}")
    for error in report["errors"]:
        lines.append(f"  !! {error['code']}: {error['message']}")
    if report.get("summary"):
        lines.append("  summary: " + ", ".join(f"{k}={v}" for k, v in report["summary"].items()))
    return "\n".join(lines)
