"""Deep links into the CloudWatch console for notifications: an alarm, a dashboard, and a Logs
Insights query pre-filled with its log group, time range and text.

The Logs Insights link encodes its query details the way the console does (it is not documented):
each string is URI-encoded with ``%`` turned into ``*`` and prefixed with ``'``; objects and
arrays are ``~(...)`` joined by ``~``; the whole is JavaScript-``escape``d, appended to
``?queryDetail=``, URI-encoded again, and every ``%`` becomes ``$``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import quote

# What JavaScript's escape() leaves alone.
_JS_ESCAPE_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@*_+-./")


def _console_home(region: str) -> str:
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"


def alarm_link(region: str, alarm_name: str) -> str:
    return f"{_console_home(region)}#alarmsV2:alarm/{quote(alarm_name, safe='')}"


def dashboard_link(region: str, dashboard_name: str) -> str:
    return f"{_console_home(region)}#dashboards/dashboard/{quote(dashboard_name, safe='')}"


def _string(value: str) -> str:
    return "'" + quote(value, safe="-._").replace("%", "*")


def _js_escape(value: str) -> str:
    return "".join(char if char in _JS_ESCAPE_SAFE else f"%{ord(char):02X}" for char in value)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def logs_insights_link(
    region: str, log_groups: Sequence[str], query: str, start: datetime, end: datetime
) -> str:
    sources = "".join(f"~{_string(group)}" for group in log_groups)
    detail = (
        f"~(end~{_string(_iso(end))}~start~{_string(_iso(start))}~timeType~'ABSOLUTE~tz~'UTC"
        f"~editorString~{_string(query)}~source~({sources}))"
    )
    fragment = quote("?queryDetail=" + _js_escape(detail), safe="-_.!~*'()").replace("%", "$")
    return f"{_console_home(region)}#logsV2:logs-insights{fragment}"


def ecs_task_link(region: str, cluster: str, task_id: str) -> str:
    return (
        f"https://{region}.console.aws.amazon.com/ecs/v2/clusters/{quote(cluster, safe='')}/tasks/"
        f"{quote(task_id, safe='')}/configuration?region={region}"
    )
