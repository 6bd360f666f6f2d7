"""`make demo`: the whole story on one machine, in three parts.

1. The zombie reaper against a real local livekit-server, on embedded defaults: it starts
   livekit-server (dev mode, loopback), opens lesson rooms with real participants — one of them the
   incident's abandoned test-account lesson — and runs the reaper as the schedule would: the zombie
   room (a participant still in it) is warned first, and DELETED once its grace is over, while the
   live lessons stay. LiveKit cannot backdate a room, so the demo moves the reaper's injected clock
   forward instead (the same clock the decision function always receives); every LiveKit call is
   real. Each notification prints as it would arrive: the e-mail's text, the chat as Slack shows it.
2. The replay of the incident log (``lkfr replay``): alarms, verdicts, actions and the lessons the
   remediation would have spared, with the example prod environment's settings
   (examples/standalone/environments.json).
3. The worker drainer against a local ECS stand-in (moto) with a real agents worker on the real
   livekit-server (``tools.demo_drainer``): attribute, reap first, cordon, drain, stop.
4. What did they do? ``lkfr audit`` reads the reaper's and the drainer's reports back from their log
   groups and the drainer's ledger, on moto, where the demo's functions stand deployed
   (``devkit.moto_deployment``).

One livekit-server serves all three parts; the names are the demo's own (environment ``demo``).
"""

from __future__ import annotations

import os

# The demo prints each report itself; keep Powertools' JSON log and EMF lines off the terminal.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "zombie_reaper")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from devkit import moto_deployment
from devkit.livekit_clients import (
    BackgroundLoop,
    Participant,
    create_rooms,
    room_names,
    wait_for_participants,
)
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService, RoomService
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.contract.policies import ReaperPolicy, RoomRule
from fleet_remediation.contract.sections import ReaperSection
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli import audit
from livekit_fleet_remediation.cli.replay import render_text, replay
from livekit_fleet_remediation.cli.replay_page import render_page
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, LocalLambdaContext, local_region
from tools import demo_drainer
from tools.demo_output import box, print_report, quiet_expected_noise
from tools.message_preview import chat_text, email_text
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

OUTPUT_DIR = Path(".demo")
REPO_ROOT = Path(__file__).resolve().parent.parent
INCIDENT_LOG = REPO_ROOT / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
EXAMPLE_CONFIG = REPO_ROOT / "examples" / "standalone" / "environments.json"
DEMO_ENV = "demo"
LOCAL_POLICY = ReaperPolicy(
    managed_room_pattern=r"^(lesson|test)-.+$",
    max_age_minutes=60,
    rules=(
        RoomRule(name_pattern=r"^lesson-demo-.*$", protected=True, description="sales demo room"),
        RoomRule(name_pattern=r"^test-.*$", max_age_minutes=30, description="test accounts (P1)"),
    ),
)
ZOMBIE = "test-aria-newpp01_up_wjv1"
ROOMS = {
    # name: participants (the abandoned tab of test account 테스트아리 is the incident's zombie)
    ZOMBIE: 1,
    "lesson-sonbeom-51": 1,
    "lesson-parkjunho-1": 1,
    "lesson-demo-sales": 0,
    "ops-monitor": 0,
}
# The simulated clock: 45 minutes in, only the test account's room (max 30 min) is over age; the
# reaper warns its participant, and deletes the room once the grace (10 min) is over.
WARNED_AT = timedelta(minutes=45)
AFTER_GRACE = WARNED_AT + timedelta(minutes=11)


class ConsoleNotifier:
    """Prints each message as it would arrive: the e-mail's text, or the chat as Slack shows it."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.sent = 0

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.sent += 1
        text = chat_text(json.loads(message)) if self.channel == "chat" else email_text(subject, message)
        box("chat (Amazon Q in Slack)" if self.channel == "chat" else "e-mail (SNS in AWS)", text)
        return f"local-{self.channel}-{self.sent}"


def dependencies(server: LocalLiveKit, mode: Mode, clock_offset: timedelta) -> ReaperDependencies:
    settings = ReaperSettings.model_validate(
        dict(
            environment_name=DEMO_ENV,
            mode_parameter_name=f"/livekit-fleet-remediation/{DEMO_ENV}/mode",
            notification_topic_arn="arn:aws:sns:local:000000000000:console",
            chat_topic_arn="arn:aws:sns:local:000000000000:console-chat",
            runbook_base_url="https://docs.example.com/fleet-remediation",
            livekit_url=server.http_url,
            livekit_secret_id="local",
            reaper=ReaperSection(policy=LOCAL_POLICY),
        )
    )
    credentials = LiveKitCredentials(api_key=server.api_key, api_secret=server.api_secret)

    def room_service() -> RoomService:
        return LiveKitRoomService(
            server.http_url, credentials, settings.reaper.livekit_request_timeout_seconds
        )

    return ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(mode),
        notifier=ConsoleNotifier("e-mail"),
        chat_notifier=ConsoleNotifier("chat"),
        room_service_factory=room_service,
        clock=lambda: datetime.now(UTC) + clock_offset,
    )


def scheduled(deps: ReaperDependencies) -> dict[str, Any]:
    """The schedule rule's event at the run's clock, in the local context's account and region."""
    rule = f"lkfr-{DEMO_ENV}-zombie-reaper"
    return schedule_event(rule, account=LOCAL_ACCOUNT, region=local_region(), now=deps.clock())


def step(number: int, title: str, event: dict[str, Any], deps: ReaperDependencies) -> dict[str, Any]:
    print(f"\n=== {number}. {title}")
    with moto_deployment.logged(DEMO_ENV, FunctionName.ZOMBIE_REAPER):
        report: dict[str, Any] = handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps)
    print_report(report)
    (OUTPUT_DIR / f"report-{number}.json").write_text(json.dumps(report, indent=2))
    return report


def main() -> None:
    quiet_expected_noise()
    OUTPUT_DIR.mkdir(exist_ok=True)
    with demo_drainer.moto_account():
        moto_deployment.deploy(DEMO_ENV, demo_drainer.LEDGER_TABLE)
        story()
        audit_story()


def audit_story() -> None:
    command = ["--env", DEMO_ENV, "--hours", "3", "--region", local_region()]
    print(f"\n=== 11. What did they do? lkfr audit {' '.join(command)}")
    audit.main(command)
    print(
        "\nIn your own account, the same view (read-only): lkfr audit --env NAME --hours 24 "
        "--config environments.json  (add --json for a document)"
    )


def story() -> None:
    print("Starting livekit-server (dev mode, 127.0.0.1) ...")
    with LocalLiveKit(log_path=OUTPUT_DIR / "livekit-server.log") as server:
        print(f"  {server.http_url}  (log: {OUTPUT_DIR}/livekit-server.log)")
        asyncio.run(create_rooms(server, list(ROOMS)))
        loop = BackgroundLoop()
        children = [
            Participant(server, loop, name, f"child-{index}").connect()
            for index, (name, count) in enumerate(ROOMS.items())
            if count
        ]
        for child in children:
            asyncio.run(asyncio.wait_for(wait_for_participants(server, child.room_name, 1), 10))
        print(f"  rooms: {', '.join(ROOMS)}; {len(children)} with a connected participant")
        reaper_story(server, children)
        for child in children:
            child.close()
        loop.close()
        print(f"\nReports (JSON, as the Lambda returns and logs them): {OUTPUT_DIR}/report-*.json")
        replay_incident()
        print("\n=== 7-10. The worker drainer: a real agents worker on livekit-server, ECS on moto")
        demo_drainer.run(server, OUTPUT_DIR, first_step=7)
    print(f"\nDrainer reports: {OUTPUT_DIR}/drainer-report-*.json")


def reaper_story(server: LocalLiveKit, children: list[Participant]) -> None:
    later = f"{int(WARNED_AT.total_seconds() // 60)} minutes later"
    step(
        1,
        "Scheduled run right now, enforcing: every room is young",
        scheduled(deps := dependencies(server, Mode.ENFORCE, timedelta(0))),
        deps,
    )
    step(
        2,
        f"Manual invoke {{}} {later}: a dry run by default, it only says what it would do",
        {},
        dependencies(server, Mode.ENFORCE, WARNED_AT),
    )
    step(
        3,
        'Same, kill switch = dry-run, manual {"dry_run": false}: the switch wins',
        {"dry_run": False},
        dependencies(server, Mode.DRY_RUN, WARNED_AT),
    )
    step(
        4,
        f"Scheduled run {later}, enforce: the test account's room is over its 30 min and someone is "
        "still in it: warned first, deleted after 10 min of grace",
        scheduled(deps := dependencies(server, Mode.ENFORCE, WARNED_AT)),
        deps,
    )
    step(
        5,
        "The scheduled run 11 minutes later (simulated clock): the grace is over, DeleteRoom",
        scheduled(deps := dependencies(server, Mode.ENFORCE, AFTER_GRACE)),
        deps,
    )
    for child in children:
        state = (
            "disconnected by LiveKit"
            if child.disconnected.wait(2 if child.room_name == ZOMBIE else 0)
            else "connected"
        )
        print(f"  participant {child.identity} in {child.room_name}: {state}")
    print(f"  rooms on livekit-server now: {', '.join(sorted(asyncio.run(room_names(server))))}")


def replay_incident() -> None:
    """The whole loop over the synthetic incident log, with the example prod environment."""
    print(f"\n=== 6. Replay of 2026-09-15: what would the three functions have done? ({INCIDENT_LOG.name})")
    result = replay(Path(os.path.relpath(INCIDENT_LOG)), "prod", EXAMPLE_CONFIG)
    page = OUTPUT_DIR / "incident.html"
    page.write_text(render_page(result), encoding="utf-8")
    render_text(result, sys.stdout)
    print(f"  (the incident page: {page}; lkfr replay --help)")


if __name__ == "__main__":
    main()
