"""`make drill`: the seed incident's failures on a real local fleet, and what the remediation does.

Real: livekit-server; ``--workers`` livekit-agents worker processes (``devkit/drill_agent.py``: the
detection-signal emitter and the drill hook wired as the docs show, a TTS stand-in and a VAD stand-in
per session), each the ECS task of its own metadata endpoint; callers that are LiveKit participants
publishing audio; the faults, on the drilled worker's processes (the drill hook's marker for the
abandoned session and the silent TTS, a real CPU limit for starvation). After each run the drilled
worker is stopped and a replacement process started, and its first call timed.

Each fault runs twice: with the functions off, and with them acting on the live fleet
(``tools.drill_live``): every minute of the drill's clock (``tools.drill_run.SCALE`` simulated seconds
per real second) the workers' own JSON lines so far (the CloudWatch Logs stand-in) go through the
replay (``livekit_fleet_remediation.offline.replay``: the detection alarms evaluated as the stack
defines them under the AWS service-behaviour delay profile, the stack's EventBridge rules routing to
the functions' own service entry points, in process, not the Lambda emulator), and each step the
functions took is done to the real fleet. The sessions lost are counted in each run's own lines.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.drills import DrillFault
from livekit_fleet_remediation.cli.replay import replay
from livekit_fleet_remediation.offline.replay_model import ReplayResult
from tools.drill_live import LiveRemediation
from tools.drill_report import ArmRun, FaultFigures, figures, render
from tools.drill_run import SCALE, Fleet, RunRecord, Step

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO_ROOT / "examples" / "standalone" / "environments.json"
DRILL_ENV = "drill"
# The reaper's max age and its warning's grace for the drill's rooms (replayed minutes): the
# example's 60 and 10 would need runs five times as long. A 5-minute session stays below 8 minutes;
# an abandoned room passes it 40 real seconds after it opened, and goes at the reaper's next run.
DRILL_MAX_AGE_MINUTES = 8
DRILL_GRACE_MINUTES = 0
# The reaper looks every replayed minute: at the example's 5 an abandoned room could outlive a run.
DRILL_REAPER_SCHEDULE_MINUTES = 1
# livekit-server closes a room 20 s after its last caller left, agents or not (its departure_timeout):
# 100 replayed minutes here, so an abandoned session stays in its room, as the seed's did, until reaped.
DEPARTURE_TIMEOUT_SECONDS = 500
# Real seconds of calls before the fault (default): the workers have sessions in progress when it comes.
FAULT_AT = 15.0
ZOMBIE, STARVED, SILENT = (
    fault.value for fault in (DrillFault.ABANDONED_SESSION, DrillFault.CPU_STARVED, DrillFault.TTS_SILENCE)
)
# Each run's faults, at real seconds after the first; the chain is the seed's order on one worker.
PLANS: dict[str, list[tuple[float, str]]] = {
    ZOMBIE: [(0, ZOMBIE)],
    STARVED: [(0, STARVED)],
    SILENT: [(0, SILENT)],
    "chain": [(0, ZOMBIE), (10, STARVED), (40, SILENT)],
}


def plan(name: str, fault_at: float) -> list[Step]:
    return [Step(fault_at + after, fault) for after, fault in PLANS[name]]


def drill_config(output: Path, workers: int) -> Path:
    """The example prod environment under the name ``drill``, enforcing, drills on, with the drill's
    max age and grace for rooms; a fleet under five tasks may drain one at a time (the example's 20%
    of the fleet would hold any drain)."""
    environments = json.loads(EXAMPLE_CONFIG.read_text())["environments"]
    env = dict(environments["prod"], mode="enforce", drills={"enabled": True})
    drainer = env["drainer"]["policy"]
    fraction = max(drainer["max_draining_fraction"], 1 / max(workers, 1))
    env["drainer"] = dict(env["drainer"], policy=dict(drainer, max_draining_fraction=fraction))
    policy = dict(
        env["reaper"]["policy"],
        max_age_minutes=DRILL_MAX_AGE_MINUTES,
        live_room_grace_minutes=DRILL_GRACE_MINUTES,
    )
    env["reaper"] = dict(env["reaper"], policy=policy, schedule_minutes=DRILL_REAPER_SCHEDULE_MINUTES)
    path = output / "environments.json"
    path.write_text(json.dumps({"environments": {DRILL_ENV: env}}, indent=2))
    return path


def _arm(
    fleet: Fleet, name: str, args: argparse.Namespace, config: Path, live: LiveRemediation | None
) -> ArmRun:
    record = fleet.run(name, plan(name, args.fault_at), args.seconds, live)
    arm = "with" if live is not None else "without"
    log = args.output / f"{name}-{arm}.jsonl"
    fleet.export(record, log)
    result: ReplayResult = replay(log, DRILL_ENV, config, profile="aws")
    (args.output / f"{name}-{arm}-replay.json").write_text(json.dumps(result.document(), indent=2))
    return ArmRun(record, result, live, fleet.replace_drilled(record.task_id))


def drill(fleet: Fleet, name: str, args: argparse.Namespace, config: Path) -> FaultFigures:
    """The fault run with the functions off, then with them acting on the live fleet (``--arm``)."""
    without = _arm(fleet, name, args, config, None) if args.arm in ("both", "without") else None
    with_ = None
    if args.arm in ("both", "with"):
        with_ = _arm(fleet, name, args, config, LiveRemediation(DRILL_ENV, config, args.output))
    return figures(name, without, with_)


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(prog="python -m tools.drill", description=__doc__.splitlines()[0])
    found.add_argument("--workers", type=int, default=8)
    found.add_argument("--seconds", type=float, default=110.0, help="real seconds per run")
    found.add_argument(
        "--fault-at", type=float, default=FAULT_AT, help="real seconds of calls before the fault"
    )
    found.add_argument("--fault", action="append", choices=list(PLANS), help="runs to make (default: all)")
    found.add_argument(
        "--arm",
        choices=("both", "with", "without"),
        default="both",
        help="run each fault with the functions off, with them acting on the fleet, or both (default)",
    )
    found.add_argument("--output", type=Path, default=Path(".drill"))
    found.add_argument("--json", action="store_true", help="one document instead of the text")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.output.mkdir(exist_ok=True)
    config = drill_config(args.output, args.workers)
    wall, cpu = time.monotonic(), _cpu_seconds()
    results: list[FaultFigures] = []
    # livekit-server's dev mode logs every packet event; at warn it leaves the two cores to the fleet.
    quiet = "logging:\n  level: warn\n"
    with LocalLiveKit(
        log_path=args.output / "livekit-server.log",
        extra_config=quiet,
        departure_timeout_seconds=DEPARTURE_TIMEOUT_SECONDS,
    ) as server:
        fleet = Fleet(server, args.workers, {})
        try:
            if not fleet.ready():
                print("the workers did not register within two minutes", file=sys.stderr)
                return 1
            for name in args.fault or list(PLANS):
                results.append(drill(fleet, name, args, config))
        finally:
            fleet.stop()
    cost = (time.monotonic() - wall, _cpu_seconds() - cpu)
    text = render(results, args.workers, cost, os.cpu_count() or 1)
    print(json.dumps([r.document() for r in results], indent=2) if args.json else text)
    return 0


def _cpu_seconds() -> float:
    """This process and its reaped children (the workers and their job processes, livekit-server)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


__all__ = ["SCALE", "RunRecord", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
