"""The kill switch's read in its own unit (``core.kill_switch.SsmModeSwitch``): an answer that lists
no parameters at all is a switch that does not exist (a typed ``KillSwitchError``, so the run fails
safe), not an untyped failure."""

from __future__ import annotations

from typing import Any

import pytest

from fleet_remediation.core.errors import KillSwitchError
from fleet_remediation.core.kill_switch import SsmModeSwitch, still_enforcing


class Ssm:
    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response

    def get_parameters(self, Names: list[str]) -> dict[str, Any]:
        return self.response


@pytest.mark.parametrize("response", [{}, {"Parameters": []}], ids=["no-key", "empty"])
def test_an_answer_without_the_environments_switch_is_a_switch_that_does_not_exist(
    response: dict[str, Any],
) -> None:
    switch = SsmModeSwitch("/env/mode", "/env/fn/mode", client=Ssm(response))  # type: ignore[arg-type]
    with pytest.raises(KillSwitchError, match=r"^kill switch /env/mode does not exist$"):
        switch.read()
    assert still_enforcing(switch) == (False, "kill switch unreadable: kill switch /env/mode does not exist")
