"""The per-environment kill switch (an SSM parameter) and how it combines with a manual dry run."""

from __future__ import annotations

from typing import Protocol

from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from fleet_remediation.core.errors import KillSwitchError
from fleet_remediation.core.report import Mode

# A change to the switch must take effect within a minute without a deploy.
KILL_SWITCH_MAX_AGE_SECONDS = 60


class ModeSwitch(Protocol):
    def read(self) -> Mode: ...


class SsmModeSwitch:
    """Reads the mode parameter through Powertools Parameters, cached for at most a minute."""

    def __init__(self, parameter_name: str, provider: SSMProvider | None = None) -> None:
        self.parameter_name = parameter_name
        self._provider = provider or SSMProvider()

    def read(self) -> Mode:
        try:
            raw = self._provider.get(self.parameter_name, max_age=KILL_SWITCH_MAX_AGE_SECONDS)
        except GetParameterError as exc:
            raise KillSwitchError(
                f"cannot read kill switch {self.parameter_name}: {exc}", resource=self.parameter_name
            ) from exc
        return parse_mode(str(raw), self.parameter_name)


def parse_mode(raw: str, source: str) -> Mode:
    try:
        return Mode(raw.strip().lower())
    except ValueError:
        allowed = ", ".join(m.value for m in Mode)
        raise KillSwitchError(f"{source} holds {raw!r}; expected one of {allowed}", resource=source) from None


def resolve_mode(switch: Mode, manual_dry_run: bool | None) -> Mode:
    """The switch is the ceiling: a manual invoke can only be stricter than it.

    ``manual_dry_run`` is None for scheduled and alarm triggers, which follow the switch.
    """
    if switch is not Mode.ENFORCE:
        return switch
    return Mode.DRY_RUN if manual_dry_run else Mode.ENFORCE
