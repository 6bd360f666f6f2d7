"""One reaper run in a fresh process, so its peak RSS and CPU are the run's own (see bench.reaper_scale).

    python -m bench._reaper_child URL CLOCK_ISO CAP

Runs the handler as Lambda would (enforce, the report logged at INFO into a counting sink) and
prints one JSON line: wall and CPU seconds of the invocation, peak RSS of the process, LiveKit
calls, the logged report line's size, and the report's own counts.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import sys
import time
from datetime import datetime

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "INFO")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

# Loaded lazily by the LiveKit adapter on a cold start; loaded here first, as the naive script does
# at its top, so the run's CPU is the run's (import time is bench.cold_imports' subject).
import aiohttp  # noqa: F401
import livekit.api  # noqa: F401

from devkit.livekit_local import DEV_API_KEY, DEV_API_SECRET
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService, RoomService
from fleet_remediation.contract.budgets import reaper_seconds_needed
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.contract.sections import ReaperSection
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.observability import logger
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

# Listing 100,000 rooms from one livekit-server takes seconds: a request deadline above the default.
REQUEST_TIMEOUT_SECONDS = 10.0
# The Lambda timeout the budget rule asks for at that deadline (contract/budgets.py), so the settings
# pass the same check a deployment's do.
TIMEOUT_SECONDS = math.ceil(reaper_seconds_needed(REQUEST_TIMEOUT_SECONDS))


class DiscardingNotifier:
    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        return "bench"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(url: str, clock_iso: str, cap: int) -> None:
    clock = datetime.fromisoformat(clock_iso)
    settings = ReaperSettings.model_validate(
        dict(
            environment_name="bench",
            mode_parameter_name="/bench/mode",
            notification_topic_arn="arn:aws:sns:local:000000000000:bench",
            runbook_base_url="https://example.com",
            livekit_url=url,
            livekit_secret_id="bench",
            reaper=ReaperSection(
                policy=ReaperPolicy(max_age_minutes=60, max_deletions_per_run=cap, delete_concurrency=5),
                timeout_seconds=TIMEOUT_SECONDS,
                livekit_request_timeout_seconds=REQUEST_TIMEOUT_SECONDS,
            ),
        )
    )
    services: list[LiveKitRoomService] = []

    def room_service() -> RoomService:
        credentials = LiveKitCredentials(api_key=DEV_API_KEY, api_secret=DEV_API_SECRET)
        service = LiveKitRoomService(url, credentials, REQUEST_TIMEOUT_SECONDS)
        services.append(service)
        return service

    deps = ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=DiscardingNotifier(),
        room_service_factory=room_service,
        clock=lambda: clock,
    )
    # The report is logged as in Lambda (serialized, written), into memory instead of stdout.
    log = io.StringIO()
    logger.registered_handler.setStream(log)  # type: ignore[attr-defined]
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    report = handler.lambda_handler(
        {"dry_run": False}, LocalLambdaContext(TIMEOUT_SECONDS * 1000), dependencies=deps
    )
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    report_lines = [line for line in log.getvalue().splitlines() if '"message":"remediation report"' in line]
    summary = report["summary"]
    print(
        json.dumps(
            {
                "rooms_seen": summary.get("rooms_seen"),
                "over_age": summary.get("rooms_over_age"),
                "reaped": summary.get("reaped"),
                "wall_seconds": round(wall, 3),
                "cpu_seconds": round(cpu, 3),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "livekit_calls": sum(service.calls for service in services),
                "tokens_signed": sum(service.tokens_signed for service in services),
                "report_bytes": max((len(line.encode()) for line in report_lines), default=0),
                "report_lines": len(report_lines),
                "errors": [e["code"] for e in report["errors"]],
                "truncated": report["truncated"],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
