"""Alarm expressions as data: one tree renders the CloudWatch metric math the stack deploys and
evaluates the same expression offline (backtest, replay, benchmark), so both judge alike."""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

PERIOD_SECONDS = 60


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "^": operator.pow,
}

_COMPARISON: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<": operator.lt}


# --- minute counts: what the metric filters publish, one minute at a time --------------------------
@dataclass
class MinuteCounts:
    """The metric-filter metrics of one minute (``None``: no datapoint for a Maximum)."""

    vad_warnings: int = 0
    vad_max_delay: float | None = None
    responses: int = 0
    first_frames: int = 0
    first_audio_timeouts: int = 0


class Statistic(StrEnum):
    SUM = "Sum"
    MAXIMUM = "Maximum"


@dataclass(frozen=True)
class AlarmInput:
    """One metric of an alarm's expression: its id there, the signal whose metric filter feeds it
    (``value_metric``: the signal's value metric, e.g. the VAD delay, instead of its count), the
    statistic, and the ``MinuteCounts`` field that holds it offline."""

    metric_id: str
    signal: str
    statistic: Statistic
    minute_field: str
    value_metric: bool = False


# --- a small metric-math expression tree: rendered for CloudWatch, evaluated offline ---------------
class Expression:
    """A CloudWatch metric-math expression that can also be evaluated in Python, so the deployed
    alarm and the offline evaluators cannot disagree. Booleans are 1 and 0, as in metric math."""

    def render(self) -> str:
        raise NotImplementedError

    def evaluate(self, values: Mapping[str, float]) -> float:
        raise NotImplementedError


@dataclass(frozen=True)
class Series(Expression):
    """A metric with no datapoint counted as 0 (``FILL(id, 0)``): quiet periods publish nothing."""

    metric_id: str

    def render(self) -> str:
        return f"FILL({self.metric_id}, 0)"

    def evaluate(self, values: Mapping[str, float]) -> float:
        return values.get(self.metric_id, 0.0)


@dataclass(frozen=True)
class Const(Expression):
    value: float

    def render(self) -> str:
        return f"{self.value:g}"

    def evaluate(self, values: Mapping[str, float]) -> float:
        return self.value


@dataclass(frozen=True)
class Arithmetic(Expression):
    op: str
    left: Expression
    right: Expression

    def render(self) -> str:
        return f"{self._operand(self.left)} {self.op} {self._operand(self.right)}"

    def _operand(self, child: Expression) -> str:
        # Parentheses wherever precedence could matter; a product or a sum inside a sum needs none.
        if isinstance(child, Arithmetic) and not (self.op == "+" and child.op in "+*"):
            return f"({child.render()})"
        return child.render()

    def evaluate(self, values: Mapping[str, float]) -> float:
        return _ARITHMETIC[self.op](self.left.evaluate(values), self.right.evaluate(values))


@dataclass(frozen=True)
class Compare(Expression):
    op: str
    left: Expression
    right: Expression

    def render(self) -> str:
        def side(child: Expression) -> str:
            return f"({child.render()})" if isinstance(child, Arithmetic) else child.render()

        return f"{side(self.left)} {self.op} {side(self.right)}"

    def evaluate(self, values: Mapping[str, float]) -> float:
        return float(_COMPARISON[self.op](self.left.evaluate(values), self.right.evaluate(values)))


@dataclass(frozen=True)
class Logical(Expression):
    op: str  # "AND" or "OR"
    operands: tuple[Expression, ...]

    def render(self) -> str:
        def part(child: Expression) -> str:
            return f"({child.render()})" if isinstance(child, Logical) else child.render()

        return f" {self.op} ".join(part(child) for child in self.operands)

    def evaluate(self, values: Mapping[str, float]) -> float:
        results = (child.evaluate(values) != 0 for child in self.operands)
        return float(all(results) if self.op == "AND" else any(results))


@dataclass(frozen=True)
class If(Expression):
    condition: Expression
    then: Expression
    otherwise: Expression

    def render(self) -> str:
        return f"IF({self.condition.render()}, {self.then.render()}, {self.otherwise.render()})"

    def evaluate(self, values: Mapping[str, float]) -> float:
        branch = self.then if self.condition.evaluate(values) != 0 else self.otherwise
        return branch.evaluate(values)


def ge(left: Expression, right: Expression) -> Compare:
    return Compare(">=", left, right)


def add(left: Expression, right: Expression) -> Arithmetic:
    return Arithmetic("+", left, right)


def times(factor: float, expression: Expression) -> Arithmetic:
    return Arithmetic("*", Const(factor), expression)


def indicator(condition: Expression) -> If:
    """1 for a breaching period, 0 otherwise: the alarm compares it with threshold 1."""
    return If(condition, Const(1), Const(0))


# --- one alarm, defined once -----------------------------------------------------------------------
@dataclass(frozen=True)
class AlarmDefinition:
    """What the CDK construct deploys and what ``AlarmEvaluator`` replays: ``expression`` over
    ``inputs`` per period of ``period_minutes``, ALARM when ``datapoints_to_alarm`` of the last
    ``evaluation_periods`` datapoints are >= 1, missing data not breaching."""

    expression: Expression
    inputs: tuple[AlarmInput, ...]
    period_minutes: int
    evaluation_periods: int
    datapoints_to_alarm: int

    @property
    def label(self) -> str:
        """Its part in a composite alarm's name: ``5min`` (one window), ``3of5min`` (N of M)."""
        if self.evaluation_periods == 1:
            return f"{self.period_minutes}min"
        return f"{self.datapoints_to_alarm}of{self.evaluation_periods * self.period_minutes}min"

    def datapoint(self, minutes: Sequence[MinuteCounts]) -> float:
        """The expression over one period's minutes (Sum or Maximum of each input, as published)."""
        values: dict[str, float] = {}
        for source in self.inputs:
            present = [value for m in minutes if (value := getattr(m, source.minute_field)) is not None]
            if present:
                combine = sum if source.statistic is Statistic.SUM else max
                values[source.metric_id] = float(combine(present))
        return self.expression.evaluate(values)


class AlarmEvaluator:
    """The alarm evaluated offline at the end of every minute, as AWS documents CloudWatch's
    evaluation ("Evaluating an alarm", CloudWatch User Guide):

    * a period of one minute or more is evaluated every minute, over the last ``evaluation_periods``
      x ``period_minutes`` whole minutes: a 5-minute period sees minutes 1-5 at the end of minute 5,
      minutes 2-6 at the end of minute 6. The periods are cut back from the evaluation minute, so
      a 5-minute alarm gets a new datapoint every minute, and a breaching window that straddles two
      of its periods a minute later breaches neither;
    * ALARM while at least ``datapoints_to_alarm`` of the last ``evaluation_periods`` datapoints
      breach (not necessarily consecutive), OK otherwise;
    * missing data: every metric enters the expression through ``FILL(id, 0)``, and AWS documents
      that FILL fills the missing datapoints of the alarm's range, the latest included, so every
      period has a datapoint and the alarm's ``notBreaching`` treatment (and the "evaluation range"
      look-back it governs) never decides a state here.

    Needs memory for that window only, so it runs over a stream of minutes of any length."""

    def __init__(self, definition: AlarmDefinition) -> None:
        self.definition = definition
        self._minutes: deque[MinuteCounts] = deque(
            maxlen=definition.period_minutes * definition.evaluation_periods
        )

    def push(self, minute: MinuteCounts) -> tuple[bool, bool]:
        """Add the minute that just closed; return (does the newest period breach, is the alarm in
        ALARM)."""
        self._minutes.append(minute)
        d, window = self.definition, list(self._minutes)
        breaching = []
        for end in range(len(window), 0, -d.period_minutes):
            period = window[max(0, end - d.period_minutes) : end]
            breaching.append(d.datapoint(period) >= 1)
        newest, in_alarm = breaching[0], sum(breaching) >= d.datapoints_to_alarm
        return newest, in_alarm


@dataclass(frozen=True)
class AnyOf:
    """A composite alarm with the rule ANY of its children (``ALARM(a) OR ALARM(b)``): in ALARM
    while any child is. A short child pages fast; a longer child over the same rule holds the
    composite through the quiet minutes between bursts of one incident."""

    children: tuple[AlarmDefinition, ...]


class CompositeEvaluator:
    """``AnyOf`` evaluated offline: each child as ``AlarmEvaluator`` evaluates it, every minute."""

    def __init__(self, composite: AnyOf) -> None:
        self._children = [AlarmEvaluator(child) for child in composite.children]

    def push(self, minute: MinuteCounts) -> tuple[bool, bool]:
        """(does any child's newest period breach, is any child in ALARM)."""
        states = [child.push(minute) for child in self._children]
        return any(breaching for breaching, _ in states), any(alarm for _, alarm in states)


def evaluator_for(alarm: AlarmDefinition | AnyOf) -> AlarmEvaluator | CompositeEvaluator:
    return CompositeEvaluator(alarm) if isinstance(alarm, AnyOf) else AlarmEvaluator(alarm)


def evaluate_alarm(
    alarm: AlarmDefinition | AnyOf, minutes: Sequence[MinuteCounts]
) -> list[tuple[bool, bool]]:
    """``push`` over consecutive minutes: (breaching, in ALARM) at each minute's end."""
    evaluator = evaluator_for(alarm)
    return [evaluator.push(minute) for minute in minutes]
