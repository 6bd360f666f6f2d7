"""What the functions read and write, from the replay (``lkfr replay``: the functions' own code over
simulated traffic, ``devkit.traffic``), for the cost model: the ``UsageProfile`` that
``livekit_fleet_remediation.cost`` prices (and ships, measured on the example environment).

Each Logs Insights look the functions make in the replay is recorded with its time range (a look
scans every byte the log group holds in it, whatever its filter), every invocation with its report's
size and its looks. The simulated fleet runs at a small volume, fast: a look's time range follows
the schedules, the windows and the alarms' transitions, not the volume. The bytes a minute of agent
logs holds come from the simulated log lines themselves, per response, scaled to the volume asked.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from devkit.traffic import Failure, FailureKind, Scenario, TrafficSimulation, export, scenario
from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_agent.detection_signals import LOGGER_NAME as SIGNAL_LOGGER
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.cost.agent_lines import EVENT_OVERHEAD_BYTES
from livekit_fleet_remediation.cost.usage import Usage, UsageProfile
from livekit_fleet_remediation.offline.log_export import read_events
from livekit_fleet_remediation.offline.replay import Replay

# The replay's simulated fleet: the detection benchmark's 35-responses-a-minute size.
REPLAY_VOLUME = 35.0
# Quiet time around a simulated incident, so its alarm opens and closes inside the run.
LEAD_MINUTES = 30
# The LiveKit credentials' cache (fleet_remediation.adapters.livekit_rooms.SECRET_MAX_AGE_SECONDS).
SECRET_CACHE_SECONDS = 300


@dataclasses.dataclass(frozen=True)
class LogVolume:
    """Bytes per response in the agent log group, each event with CloudWatch's overhead: the stock
    livekit-agents lines and the agent package's signal lines."""

    stock_bytes_per_response: float
    signal_bytes_per_response: float


class _Recording:
    """A Logs Insights (or the drainer's ``WorkerLogs``) that records each look's function and range."""

    def __init__(self, inner: Any, function: str, usage: Usage) -> None:
        self._inner, self._function, self._usage = inner, function, usage

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def look(*args: Any, **kwargs: Any) -> Any:
            moments = [a for a in args if isinstance(a, datetime)]
            if len(moments) >= 2:
                self._usage.looks[self._function] += 1
                minutes = (moments[1] - moments[0]).total_seconds() / 60
                spent = self._usage.look_minutes
                spent[self._function] = spent.get(self._function, 0.0) + minutes
                hours, hour = self._usage.hour_minutes, moments[1].strftime("%Y-%m-%dT%H")
                hours[hour] = hours.get(hour, 0.0) + minutes
            return found(*args, **kwargs)

        return look


class _MeteredReplay(Replay):
    def __init__(self, usage: Usage, *args: Any) -> None:
        # Set first: the replay builds the functions' dependencies, which record into it, as it starts.
        self.usage = usage
        super().__init__(*args)

    def _recorded_dependencies(self) -> tuple[Any, Any, Any]:
        reaper, responder, drainer = super()._dependencies()
        responder_name, drainer_name = FunctionName.TTS_REACH_ALARM.value, FunctionName.WORKER_DRAINER.value
        return (
            reaper,
            dataclasses.replace(
                responder, insights=_Recording(responder.insights, responder_name, self.usage)
            ),
            dataclasses.replace(
                drainer, worker_logs=_Recording(drainer.worker_logs, drainer_name, self.usage)
            ),
        )

    def _dependencies(self) -> tuple[Any, Any, Any]:
        reaper, responder, drainer = self._recorded_dependencies()
        return (
            dataclasses.replace(
                reaper,
                room_service_factory=self._reading(reaper.room_service_factory, FunctionName.ZOMBIE_REAPER),
            ),
            responder,
            dataclasses.replace(
                drainer,
                room_service_factory=self._reading(drainer.room_service_factory, FunctionName.WORKER_DRAINER),
            ),
        )

    def _reading(self, create: Callable[[], Any], function: FunctionName) -> Callable[[], Any]:
        """A LiveKit client reads the secret unless this function's container read it in the last
        five minutes (the provider's cache: one warm container per function)."""
        windows: set[int] = set()

        def created() -> Any:
            window = int(self.world.clock().timestamp() // SECRET_CACHE_SECONDS)
            if window not in windows:
                windows.add(window)
                self.usage.secret_reads[function.value] += 1
            return create()

        return created

    def _record(self, function: FunctionName, trigger: str, report: dict[str, Any]) -> None:
        self.usage.invocations[function.value] += 1
        self.usage.report_bytes[function.value] += len(json.dumps(report, separators=(",", ":")))
        super()._record(function, trigger, report)


def replay_usage(chosen: Scenario, env_name: str, config: EnvironmentConfig) -> tuple[Usage, LogVolume]:
    """The replay of ``chosen``: its usage, and the bytes per response of its simulated log lines."""
    sim = TrafficSimulation(chosen)
    buffer = io.StringIO()
    export(sim, buffer)
    events = read_events(io.StringIO(buffer.getvalue()))
    started = config.detection.catalog().response_started
    responses = max(sum(1 for e in events if started.matches(e.record)), 1)
    stock = signal = 0
    for event in events:
        size = len(json.dumps(event.record, separators=(",", ":"))) + EVENT_OVERHEAD_BYTES
        if event.record.get("name") == SIGNAL_LOGGER:
            signal += size
        else:
            stock += size
    usage = Usage(minutes=chosen.minutes)
    engine = _MeteredReplay(usage, events, env_name, config)
    engine.run()
    usage.notifications = len(engine.world.sent)
    return usage, LogVolume(stock / responses, signal / responses)


def baseline_scenario(minutes: int, seed: int = 1) -> Scenario:
    return scenario("steady", REPLAY_VOLUME, minutes, seed)


def outage_scenario(hours: float, seed: int = 1) -> Scenario:
    """A provider outage (every TTS first frame missing, fleet-wide) of ``hours``, quiet before and after."""
    outage = round(hours * 60)
    base = scenario("steady", REPLAY_VOLUME, LEAD_MINUTES * 2 + outage, seed)
    failure = Failure(FailureKind.PROVIDER_OUTAGE, start_minute=LEAD_MINUTES, duration_minutes=outage)
    return dataclasses.replace(base, name=f"provider-outage-{hours:g}h", failure=failure)


def measured_profile(
    run: Callable[[Scenario], tuple[Usage, LogVolume]],
    without_backoff: Callable[[Scenario], tuple[Usage, LogVolume]],
    baseline_minutes: int,
    incident_hours: float,
) -> UsageProfile:
    """A healthy run, the outage of ``incident_hours`` and one hour of it without back-off."""
    baseline, volume = run(baseline_scenario(baseline_minutes))
    incident = run(outage_scenario(incident_hours))[0]
    today = without_backoff(outage_scenario(1.0))[0]
    return UsageProfile(
        baseline=baseline,
        incident=incident,
        incident_hours=incident_hours,
        without_backoff=today,
        stock_bytes_per_response=volume.stock_bytes_per_response,
        signal_bytes_per_response=volume.signal_bytes_per_response,
    )
