"""Detection parameters shared by the CDK alarms and the offline backtest: one model, so the
backtest evaluates exactly the alarms that are deployed.

Both alarms use one-minute periods and fire when ``datapoints_to_alarm`` of the last
``evaluation_periods`` minutes breach; missing data is not breaching.

* VAD alarm: a minute breaches when slow-inference warnings >= ``min_warnings_per_minute`` AND the
  largest ``delay`` >= ``min_max_delay_seconds``.
* TTS reach alarm: reach = first audio frames ÷ responses started in the minute. A minute with
  fewer than ``min_responses_per_minute`` responses counts as reach 1.0 (not breaching); a minute
  without any response is missing data. A minute breaches when reach < ``threshold``.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from fleet_remediation.contract.models import StrictModel
from fleet_remediation.contract.signals import SignalCatalog, SignalSettings

PERIOD_SECONDS = 60
DEFAULT_NAMESPACE_PREFIX = "LiveKitAgents"


class NOfM(StrictModel):
    evaluation_periods: int = Field(default=5, ge=1, le=60, description="M: minutes looked at.")
    datapoints_to_alarm: int = Field(default=3, ge=1, le=60, description="N: breaching minutes needed.")

    @model_validator(mode="after")
    def _n_within_m(self) -> NOfM:
        if self.datapoints_to_alarm > self.evaluation_periods:
            raise ValueError("datapoints_to_alarm must not exceed evaluation_periods")
        return self


class VadAlarmSettings(NOfM):
    """Incident report: 1-2 warnings of 0.2-0.8 s are normal; a resident job logs hundreds."""

    min_warnings_per_minute: float = Field(default=3, gt=0)
    min_max_delay_seconds: float = Field(default=2.0, gt=0)


class TtsReachAlarmSettings(NOfM):
    """Healthy lessons reach a first audio frame for every response (seed: 57 of 57). Below ten
    responses a minute one interrupted response moves reach by 10 %: too noisy to alarm on.

    The responder looks further back than the alarm (``analysis_window_minutes``) because a
    worker's failed lessons accumulate: with too few jobs no test can tell one worker from chance.
    """

    threshold: float = Field(default=0.97, gt=0, le=1, description="Alarm when reach is below this.")
    min_responses_per_minute: int = Field(default=10, ge=1)
    analysis_window_minutes: int = Field(default=30, ge=1, le=180)
    concentration_alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="p-value (exact, corrected for picking the worst worker) that blames one worker.",
    )
    min_failed_jobs: int = Field(default=2, ge=1, description="Never blame a worker for a single failure.")

    @model_validator(mode="after")
    def _window_covers_alarm(self) -> TtsReachAlarmSettings:
        if self.analysis_window_minutes < self.evaluation_periods:
            raise ValueError("analysis_window_minutes must cover evaluation_periods")
        return self


class DetectionConfig(StrictModel):
    """The ``detection`` section of an environment in cdk.json."""

    signals: SignalSettings = SignalSettings()
    vad_alarm: VadAlarmSettings = VadAlarmSettings()
    tts_reach_alarm: TtsReachAlarmSettings = TtsReachAlarmSettings()
    metric_namespace_prefix: str = Field(
        default=DEFAULT_NAMESPACE_PREFIX, pattern=r"^[A-Za-z0-9_./#:-]+$", max_length=200
    )

    def metric_namespace(self, environment_name: str) -> str:
        """Metric filters cannot attach a static dimension, so each environment gets its namespace."""
        return f"{self.metric_namespace_prefix}/{environment_name}"

    def catalog(self) -> SignalCatalog:
        return SignalCatalog.from_settings(self.signals)
