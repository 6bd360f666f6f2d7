"""The kill switch: the environment's SSM parameter and, under it, one parameter per function and
one per agent service.

The effective mode is the strictest of those a function reads (``off`` < ``dry-run`` <
``enforce``): the environment's switch is the ceiling, a function's or a service's own switch can
only lower it. A service's responder and drainer read all three; the reaper, the environment's and
its own. The stack creates the lower switches as ``enforce``, so by default the environment's governs.

Functions re-read the switch right before every destructive step; a read is cached for at most
``KILL_SWITCH_MAX_AGE_SECONDS``, so a change reaches a running invocation within that time (all
parameters come back in one GetParameters call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.core.errors import KillSwitchError
from fleet_remediation.core.report_model import Mode

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

# A change to the switch must reach even a running invocation within seconds.
KILL_SWITCH_MAX_AGE_SECONDS = 5.0
_STRICTNESS = {Mode.OFF: 0, Mode.DRY_RUN: 1, Mode.ENFORCE: 2}


class ModeSwitch(Protocol):
    def read(self) -> Mode: ...


def strictest(*modes: Mode) -> Mode:
    return min(modes, key=_STRICTNESS.__getitem__)


class SsmModeSwitch:
    """Reads the environment's switch and, when named, the function's and the service's own, in one
    call, over ``client`` (built from ``KILL_SWITCH_READ`` by ``adapters.common_wiring.kill_switch_for``)."""

    def __init__(
        self,
        parameter_name: str,
        function_parameter_name: str | None = None,
        *,
        client: SSMClient,
        service_parameter_name: str | None = None,
        max_age_seconds: float = KILL_SWITCH_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.parameter_name = parameter_name
        self.lower_parameter_names = [n for n in (function_parameter_name, service_parameter_name) if n]
        self.max_age_seconds = max_age_seconds
        self._client = client
        self._clock = clock
        self._cached: tuple[float, Mode] | None = None
        self.reads = 0

    def read(self) -> Mode:
        now = self._clock()
        if self._cached is not None and now - self._cached[0] < self.max_age_seconds:
            return self._cached[1]
        mode = self._read_parameters()
        self._cached = (now, mode)
        return mode

    def cached(self) -> Mode | None:
        """What ``read`` answers without calling SSM (its last read, while fresh); None when it would
        call SSM. Lets an event loop skip the thread a blocking read needs."""
        if self._cached is not None and self._clock() - self._cached[0] < self.max_age_seconds:
            return self._cached[1]
        return None

    def _read_parameters(self) -> Mode:
        names = [self.parameter_name, *self.lower_parameter_names]
        self.reads += 1
        try:
            response = self._client.get_parameters(Names=names)
        except (ClientError, BotoCoreError) as exc:
            raise KillSwitchError(
                f"cannot read kill switch {', '.join(names)}: {exc}", resource=self.parameter_name
            ) from exc
        values = {parameter["Name"]: parameter["Value"] for parameter in response.get("Parameters", [])}
        if self.parameter_name not in values:
            raise KillSwitchError(
                f"kill switch {self.parameter_name} does not exist", resource=self.parameter_name
            )
        modes = [parse_mode(values[self.parameter_name], self.parameter_name)]
        # A stack deployed before the lower switches has none: the environment's switch governs.
        modes += [parse_mode(values[name], name) for name in self.lower_parameter_names if name in values]
        return strictest(*modes)


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


def still_enforcing(switch: ModeSwitch) -> tuple[bool, str]:
    """The check before a destructive step: whether to go on, and if not, why (an unreadable
    switch stops the step too — fail safe)."""
    try:
        mode = switch.read()
    except KillSwitchError as exc:
        return False, f"kill switch unreadable: {exc.message}"
    return enforcing(mode)


def enforcing(mode: Mode) -> tuple[bool, str]:
    """Whether a step may go on under ``mode``, and if not, why."""
    if mode is not Mode.ENFORCE:
        return False, f"kill switch is now {mode.value}"
    return True, ""
