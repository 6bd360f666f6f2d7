"""One reaper run in a fresh process, so its peak RSS is the run's own (see bench.reaper_scale)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from datetime import datetime

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from devkit.fixed_mode import FixedModeSwitch
from devkit.lambda_context import LocalLambdaContext
from devkit.livekit_local import DEV_API_KEY, DEV_API_SECRET
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService, RoomService
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.contract.settings import ReaperSection, ReaperSettings
from fleet_remediation.core.report import Mode
from zombie_reaper import handler
from zombie_reaper.service import ReaperDependencies


class CountingNotifier:
    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        return "bench"


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
                policy=ReaperPolicy(max_age_minutes=60, max_deletions_per_run=cap, delete_concurrency=5)
            ),
        )
    )
    services: list[LiveKitRoomService] = []

    def room_service() -> RoomService:
        service = LiveKitRoomService(
            url, LiveKitCredentials(api_key=DEV_API_KEY, api_secret=DEV_API_SECRET), 10
        )
        services.append(service)
        return service

    deps = ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=CountingNotifier(),
        room_service_factory=room_service,
        clock=lambda: clock,
    )
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    report = handler.lambda_handler({"dry_run": False}, LocalLambdaContext(900_000), dependencies=deps)
    wall = time.perf_counter() - started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "wall_seconds": round(wall, 2),
                "reaped": report["summary"].get("reaped"),
                "livekit_calls": services[0].calls,
                "peak_rss_mib": round(rss_after / 1024, 1),
                "rss_growth_mib": round((rss_after - rss_before) / 1024, 1),
                "errors": report["errors"],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
