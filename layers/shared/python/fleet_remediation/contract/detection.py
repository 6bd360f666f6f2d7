"""Detection parameters shared by the CDK alarms and the offline evaluators (backtest, benchmark):
one model, and from it one definition per alarm that yields both the CloudWatch metric math the
stack deploys and the Python evaluation of that same expression over minute counts.

VAD alarm (one-minute periods, ``datapoints_to_alarm`` of the last ``evaluation_periods`` minutes,
missing data not breaching): a minute breaches when slow-inference warnings >=
``min_warnings_per_minute`` AND the largest ``delay`` >= ``min_max_delay_seconds``.

TTS-reach alarm: a composite alarm, ANY of two metric alarms over the same rule: one period of
``window_minutes`` (default 5) pages fast, one of ``hold_window_minutes`` (default 30) holds the
incident. Each is evaluated every minute over its last whole minutes (CloudWatch's sliding
evaluation window) and is in ALARM while its window breaches. A silent worker's sessions end in
a minute or two and new ones reach it every few minutes, so its timeouts come in bursts and a
5-minute window clears between them: alone it paged 1-5 times per incident. The longer window
still holds the bursts (its threshold grows only with the square root of its expected count), so
the incident pages once and clears once. (More evaluation periods of the 5-minute alarm would
not hold it: CloudWatch cuts its range into consecutive periods back from the evaluation minute,
and a burst that straddles two of them breaches neither.) A window breaches when either rule holds:

* timeouts: explicit first-audio timeouts (the agent-side emitter's ``tts_first_audio_timeout``)
  >= ``min_timeouts`` + E + ``timeout_sigmas`` x sqrt(E), where E = ``expected_timeout_rate`` x
  responses is the count that isolated hangs of a healthy provider produce. A silent TTS is
  counted, not inferred, so the first-audio lag cannot make it breach; the threshold follows the
  Poisson noise of healthy timeouts, so it is quiet at any volume and still low where traffic is.
* reach (for agents without the timeout line): responses without a first audio frame in the
  window >= ``reach_max_missing_fraction`` x responses + ``reach_lag_allowance`` x sqrt(responses),
  with at least ``reach_min_responses`` responses. A frame that follows its response by 0.3-9 s
  lands in the next minute only for responses started in the window's last seconds, so over
  five minutes the lag moves a few responses, on the order of sqrt(responses), never a share.

Metric cost does not grow with traffic: every input is a dimensionless metric-filter metric.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field, model_validator

from fleet_remediation.contract.alarm_math import (
    AlarmDefinition,
    AlarmInput,
    AnyOf,
    Arithmetic,
    Const,
    Logical,
    Series,
    Statistic,
    add,
    ge,
    indicator,
    times,
)
from fleet_remediation.contract.models import StrictModel
from fleet_remediation.contract.signals import SignalCatalog, SignalSettings

DEFAULT_NAMESPACE_PREFIX = "LiveKitAgents"


# --- settings --------------------------------------------------------------------------------------
class VadAlarmSettings(StrictModel):
    """Incident report: 1-2 warnings of 0.2-0.8 s are normal; a resident job logs hundreds."""

    min_warnings_per_minute: float = Field(
        default=3, gt=0, description="A minute breaches with at least this many slow-inference warnings..."
    )
    min_max_delay_seconds: float = Field(
        default=2.0, gt=0, description="... and its largest delay (backlog) at least this many seconds."
    )
    evaluation_periods: int = Field(default=5, ge=1, le=60, description="M: minutes looked at.")
    datapoints_to_alarm: int = Field(default=3, ge=1, le=60, description="N: breaching minutes needed.")
    hold_minutes: int = Field(
        default=30, ge=0, le=60, description="The holding alarm's minutes looked at (0: no hold)."
    )
    hold_datapoints: int = Field(
        default=6, ge=1, le=60, description="The holding alarm's breaching minutes needed."
    )

    @model_validator(mode="after")
    def _n_within_m(self) -> VadAlarmSettings:
        if self.datapoints_to_alarm > self.evaluation_periods:
            raise ValueError("datapoints_to_alarm must not exceed evaluation_periods")
        if self.hold_minutes and not (
            self.hold_minutes > self.evaluation_periods
            and self.datapoints_to_alarm < self.hold_datapoints <= self.hold_minutes
        ):
            raise ValueError(
                "hold_minutes must be 0, or longer than evaluation_periods with hold_datapoints "
                "more than datapoints_to_alarm and at most hold_minutes"
            )
        return self

    def alarm(self) -> AnyOf:
        """What pages: N of M minutes (fast), and while a worker stays starved, the same breaching
        minute in ``hold_datapoints`` of the last ``hold_minutes`` (holds the incident between the
        starved worker's bursts, which one-minute periods count exactly)."""
        fast = self.definition()
        if not self.hold_minutes:
            return AnyOf((fast,))
        hold = dataclasses.replace(
            fast, evaluation_periods=self.hold_minutes, datapoints_to_alarm=self.hold_datapoints
        )
        return AnyOf((fast, hold))

    def definition(self) -> AlarmDefinition:
        condition = Logical(
            "AND",
            (
                ge(Series("warnings"), Const(self.min_warnings_per_minute)),
                ge(Series("maxdelay"), Const(self.min_max_delay_seconds)),
            ),
        )
        return AlarmDefinition(
            expression=indicator(condition),
            inputs=(
                AlarmInput("warnings", "slow_vad", Statistic.SUM, "vad_warnings"),
                AlarmInput("maxdelay", "slow_vad", Statistic.MAXIMUM, "vad_max_delay", value_metric=True),
            ),
            period_minutes=1,
            evaluation_periods=self.evaluation_periods,
            datapoints_to_alarm=self.datapoints_to_alarm,
        )

    def describe(self) -> str:
        return (
            f">= {self.min_warnings_per_minute:g} slow-inference warnings/min and max delay >= "
            f"{self.min_max_delay_seconds:g}s in {self.datapoints_to_alarm} of "
            f"{self.evaluation_periods} minutes"
            + (f" (held while in {self.hold_datapoints} of {self.hold_minutes})" if self.hold_minutes else "")
        )


class TtsReachAlarmSettings(StrictModel):
    """The TTS-reach alarm (see the module docstring) and the responder's analysis.

    Defaults: healthy traffic has rare isolated first-audio timeouts (a provider request that hangs
    once), assumed at 0.1 % of responses. The threshold 2 + E + 4.5 sqrt(E) (E = that share of the
    window's responses) asks for 3 timeouts in a window of 25 responses, 5 of 175, 9 of 1,250 and
    27 of 10,000: isolated hangs reach it about once in 10^5 windows or less, while one silent
    worker's sessions in progress reach it within a minute or two (bench.detection).
    Without the timeout line, healthy sessions reach a first audio frame for nearly every response
    (seed: 57 of 57); the 3 % tolerance covers responses cut short by the user (interruptions,
    sessions ending mid-sentence) and the lag allowance covers responses whose frame is still on the
    way when the window closes (about 4 standard deviations at a 9 s lag).

    The responder looks further back than the alarm (``analysis_window_minutes``) because a
    worker's failed sessions accumulate: with too few jobs no test can tell one worker from chance.
    """

    window_minutes: int = Field(
        default=5, ge=1, le=60, description="The alarm's period: sums over this many minutes."
    )
    min_timeouts: float = Field(
        default=2, ge=1, description="Timeouts rule: the floor, whatever the expected count."
    )
    expected_timeout_rate: float = Field(
        default=0.001,
        ge=0,
        lt=1,
        description="Timeouts rule: share of responses that time out on healthy traffic (isolated hangs).",
    )
    timeout_sigmas: float = Field(
        default=4.5,
        ge=0,
        description="Timeouts rule: standard deviations above the expected count (Poisson) to breach.",
    )
    reach_min_responses: int = Field(
        default=20, ge=1, description="Reach rule: silent below this many responses in the window."
    )
    reach_max_missing_fraction: float = Field(
        default=0.03, ge=0, lt=1, description="Reach rule: share of responses that may lack a frame."
    )
    reach_lag_allowance: float = Field(
        default=1.0,
        ge=0,
        description="Reach rule: plus this many sqrt(responses) for frames still on the way.",
    )
    hold_window_minutes: int = Field(
        default=30,
        ge=0,
        le=180,
        description="The holding alarm's window over the same rule (0: the fast alarm alone pages).",
    )
    analysis_window_minutes: int = Field(
        default=30, ge=1, le=180, description="The responder's window (it must cover window_minutes)."
    )
    concentration_alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="p-value (exact, corrected for picking the worst worker) that blames one worker.",
    )
    min_failed_jobs: int = Field(default=2, ge=1, description="Never blame a worker for a single failure.")

    @model_validator(mode="after")
    def _window_covers_alarm(self) -> TtsReachAlarmSettings:
        if self.analysis_window_minutes < self.window_minutes:
            raise ValueError("analysis_window_minutes must cover window_minutes")
        if 0 < self.hold_window_minutes <= self.window_minutes:
            raise ValueError("hold_window_minutes must be 0 or longer than window_minutes")
        return self

    def alarm(self) -> AnyOf:
        """What pages: the fast window, and the holding window when there is one."""
        if not self.hold_window_minutes:
            return AnyOf((self.definition(),))
        return AnyOf((self.definition(), self.definition(self.hold_window_minutes)))

    def definition(self, window_minutes: int | None = None) -> AlarmDefinition:
        """The rule over one window (default the fast ``window_minutes``)."""
        responses, frames, timeouts = Series("responses"), Series("frames"), Series("timeouts")
        expected = times(self.expected_timeout_rate, responses)
        timeouts_rule = ge(
            timeouts,
            add(
                add(Const(self.min_timeouts), expected),
                times(self.timeout_sigmas, Arithmetic("^", expected, Const(0.5))),
            ),
        )
        reach_rule = Logical(
            "AND",
            (
                ge(responses, Const(self.reach_min_responses)),
                ge(
                    Arithmetic("-", responses, frames),
                    add(
                        times(self.reach_max_missing_fraction, responses),
                        times(self.reach_lag_allowance, Arithmetic("^", responses, Const(0.5))),
                    ),
                ),
            ),
        )
        return AlarmDefinition(
            expression=indicator(Logical("OR", (timeouts_rule, reach_rule))),
            inputs=(
                AlarmInput("responses", "response_started", Statistic.SUM, "responses"),
                AlarmInput("frames", "first_audio_frame", Statistic.SUM, "first_frames"),
                AlarmInput("timeouts", "first_audio_timeout", Statistic.SUM, "first_audio_timeouts"),
            ),
            period_minutes=window_minutes or self.window_minutes,
            evaluation_periods=1,
            datapoints_to_alarm=1,
        )

    def describe(self) -> str:
        windows = f"{self.window_minutes}-min window" + (
            f" (held by the same rule over {self.hold_window_minutes} min)"
            if self.hold_window_minutes
            else ""
        )
        return (
            f"in a {windows}: first-audio timeouts >= {self.min_timeouts:g} + "
            f"E + {self.timeout_sigmas:g} sqrt(E), E = {self.expected_timeout_rate:.2%} of responses, "
            f"or (>= {self.reach_min_responses} responses and) "
            f"responses without a first frame >= {self.reach_max_missing_fraction:.0%} of responses + "
            f"{self.reach_lag_allowance:g} x sqrt(responses)"
        )


class DetectionConfig(StrictModel):
    """The ``detection`` section of an environment in cdk.json."""

    signals: SignalSettings = SignalSettings()
    vad_alarm: VadAlarmSettings = VadAlarmSettings()
    tts_reach_alarm: TtsReachAlarmSettings = TtsReachAlarmSettings()
    metric_namespace_prefix: str = Field(
        default=DEFAULT_NAMESPACE_PREFIX,
        pattern=r"^[A-Za-z0-9_./#:-]+$",
        max_length=200,
        description="The agents' metrics go to the namespace <prefix>/<environment>/<agent service>.",
    )

    def metric_namespace(self, environment_name: str, service: str) -> str:
        """Metric filters cannot attach a static dimension, so each environment's agent service gets
        its namespace."""
        return f"{self.metric_namespace_prefix}/{environment_name}/{service}"

    def catalog(self) -> SignalCatalog:
        return SignalCatalog.from_settings(self.signals)
