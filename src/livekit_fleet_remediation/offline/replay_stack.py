"""The replay's stack around the functions: their settings as the stack builds them at synth (the
stores named as simulations), and the simulated world they run against, rebuilt from the log
(``replay_world``, ``replay_ecs``, ``replay_stores`` say how each part behaves)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from fleet_remediation.contract.naming import FunctionName, mode_parameter_name
from fleet_remediation.contract.settings import (
    DrainerSettings,
    ReaperSettings,
    TtsReachSettings,
    settings_for_deployment,
)
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_ecs import SimulatedEcsService, SimulatedWorkerProbe
from livekit_fleet_remediation.offline.replay_model import SIMULATED_STORE
from livekit_fleet_remediation.offline.replay_stores import (
    SentNotification,
    SimulatedAlarmStates,
    SimulatedEventBus,
    SimulatedLedger,
    SimulatedNotifier,
    SimulatedOnceGuard,
)
from livekit_fleet_remediation.offline.replay_timing import (
    DelayedLogsInsights,
    DelayedWorkerLogs,
    ReplayTiming,
    rolling_deployments,
)
from livekit_fleet_remediation.offline.replay_world import (
    LoggedJob,
    SimulatedClock,
    SimulatedLiveKit,
    jobs_from_events,
    room_service_factory,
)
from tts_reach_alarm.dependencies import TtsReachDependencies
from worker_drainer.dependencies import DrainerDependencies
from zombie_reaper.dependencies import ReaperDependencies

FunctionSettings = dict[FunctionName, ReaperSettings | TtsReachSettings | DrainerSettings]


def function_settings(env_name: str, config: EnvironmentConfig, account: str) -> FunctionSettings:
    """Each function's settings model built from the environment as the stack builds it at synth, with
    the stores the stack would create named as simulations."""
    path = f"environments.{env_name}."
    # The replay covers the environment's first agent service, with its own sections where it has them.
    config, service = config.for_service(config.agent_service), config.agent_service.name
    common = {
        "environment_name": env_name,
        "mode_parameter_name": mode_parameter_name(env_name),
        "notification_topic_arn": f"arn:aws:sns:{config.region}:{account}:{SIMULATED_STORE}-notifications",
        "runbook_base_url": config.runbook_base_url,
    }
    logged = {**common, "agent_log_group": config.agent_service.agent_log_group}
    livekit = {"livekit_url": config.livekit_url, "livekit_secret_id": config.livekit_secret_name}
    return {
        FunctionName.ZOMBIE_REAPER: settings_for_deployment(
            ReaperSettings,
            {**common, **livekit, "reaper": config.reaper, "agent_services": config.service_identities},
            path,
        ),
        FunctionName.TTS_REACH_ALARM: settings_for_deployment(
            TtsReachSettings,
            {
                **logged,
                "aws_region": config.region,
                "agent_service": service,
                "idempotency_table_name": SIMULATED_STORE,
                "detection": config.detection,
                "tts_reach": config.tts_reach,
                "task_reach": config.drainer.task_reach,
            },
            path,
        ),
        FunctionName.WORKER_DRAINER: settings_for_deployment(
            DrainerSettings,
            {
                **logged,
                **livekit,
                "reaper": config.reaper,
                "drainer": config.drainer,
                "signals": config.detection.signals,
                "tts_reach_alarm": config.detection.tts_reach_alarm,
                "agent_service": service,
                "ecs_cluster": config.agent_service.ecs_cluster,
                "ecs_service": config.agent_service.ecs_service,
                "ledger_table_name": SIMULATED_STORE,
            },
            path,
        ),
    }


@dataclass
class SimulatedWorld:
    """Everything outside the functions, rebuilt from the log: the clock, LiveKit, ECS, and the AWS
    stores (in memory); ``sent`` collects what the functions would have published."""

    events: list[LogEvent]
    clock: SimulatedClock
    jobs: list[LoggedJob]
    livekit: SimulatedLiveKit
    ecs: SimulatedEcsService
    bus: SimulatedEventBus
    timing: ReplayTiming
    ledger: SimulatedLedger = field(default_factory=SimulatedLedger)
    alarm_states: SimulatedAlarmStates = field(default_factory=SimulatedAlarmStates)
    sent: list[SentNotification] = field(default_factory=list)

    @classmethod
    def from_events(
        cls,
        events: Sequence[LogEvent],
        config: EnvironmentConfig,
        *,
        region: str,
        account: str,
        profile: DelayProfile = INSTANT,
        seed: int = 1,
    ) -> SimulatedWorld:
        clock = SimulatedClock(events[0].at)
        timing = ReplayTiming(profile, seed, events, clock)
        jobs = jobs_from_events(events)
        ecs = SimulatedEcsService(
            events,
            clock,
            cluster=config.agent_service.ecs_cluster,
            service=config.agent_service.ecs_service,
            region=region,
            account=account,
            deployments=rolling_deployments(events, timedelta(seconds=profile.deployment.p99 or 900.0)),
            start_delay=lambda: timing.seconds(profile.task_start),
        )
        bus = SimulatedEventBus(clock, region=region, account=account)
        return cls(list(events), clock, jobs, SimulatedLiveKit(jobs, clock), ecs, bus, timing)

    def dependencies(
        self, settings: FunctionSettings, mode: Mode, catalog: SignalCatalog
    ) -> tuple[ReaperDependencies, TtsReachDependencies, DrainerDependencies]:
        """Each function's dependencies on this world, under a kill switch fixed at ``mode``."""
        switch = FixedModeSwitch(mode)
        reaper_settings = settings[FunctionName.ZOMBIE_REAPER]
        responder_settings = settings[FunctionName.TTS_REACH_ALARM]
        drainer_settings = settings[FunctionName.WORKER_DRAINER]
        assert isinstance(reaper_settings, ReaperSettings)
        assert isinstance(responder_settings, TtsReachSettings)
        assert isinstance(drainer_settings, DrainerSettings)
        rooms = room_service_factory(self.livekit)

        def notifier(function: FunctionName) -> SimulatedNotifier:
            return SimulatedNotifier(function.value, self.clock, self.sent)

        reaper = ReaperDependencies(
            settings=reaper_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.ZOMBIE_REAPER),
            room_service_factory=rooms,
            clock=self.clock,
        )
        responder = TtsReachDependencies(
            settings=responder_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.TTS_REACH_ALARM),
            events=self.bus,
            insights=DelayedLogsInsights(self.events, catalog, self.timing),
            once=SimulatedOnceGuard(),
            clock=self.clock,
            alarm_states=self.alarm_states,
        )
        drainer = DrainerDependencies(
            settings=drainer_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.WORKER_DRAINER),
            ecs=self.ecs,
            ledger=self.ledger,
            worker_logs=DelayedWorkerLogs(self.events, catalog.slow_vad, catalog, self.timing),
            worker_probe=SimulatedWorkerProbe(self.jobs, self.ecs, self.livekit),
            room_service_factory=rooms,
            alarm_states=self.alarm_states,
            clock=self.clock,
        )
        return reaper, responder, drainer
