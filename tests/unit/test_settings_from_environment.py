"""How a function reads its settings model from its environment at cold start: a field's variable is
its name in any case, a model, list or mapping travels as JSON, and every problem is a
ConfigurationError naming the variable."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from fleet_remediation.contract.errors import ConfigurationError
from fleet_remediation.contract.settings import FunctionSettings, settings_from_environment


class Limits(BaseModel):
    rooms: int


class ProbeSettings(FunctionSettings):
    limits: Limits | None = None
    names: tuple[str, ...] = ()
    label: str = "none"


REQUIRED = {
    "ENVIRONMENT_NAME": "staging",
    "MODE_PARAMETER_NAME": "/lkfr/staging/mode",
    "NOTIFICATION_TOPIC_ARN": "arn:aws:sns:us-east-1:111111111111:lkfr",
    "RUNBOOK_BASE_URL": "https://runbooks.example.com/",
}


def test_a_field_is_read_from_its_name_in_any_case_and_other_variables_are_not_read() -> None:
    read = settings_from_environment(
        ProbeSettings, {**REQUIRED, "label": "lower", "UNRELATED_VARIABLE": "x", "PATH": "/usr/bin"}
    )
    assert read.label == "lower"
    assert read.environment_name == "staging"
    assert read.limits is None


def test_models_and_lists_travel_as_json_and_text_fields_stay_text() -> None:
    read = settings_from_environment(
        ProbeSettings, {**REQUIRED, "LIMITS": '{"rooms": 3}', "NAMES": '["a", "b"]', "LABEL": '["a"]'}
    )
    assert read.limits == Limits(rooms=3)
    assert read.names == ("a", "b")
    assert read.label == '["a"]'


def test_what_synth_deploys_reads_back_equal() -> None:
    variables = {**REQUIRED, "LIMITS": '{"rooms": 7}', "NAMES": '["x"]'}
    deployed = settings_from_environment(ProbeSettings, variables)
    assert settings_from_environment(ProbeSettings, deployed.to_lambda_environment()) == deployed


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"LIMITS": "{rooms: 3}"}, r"^LIMITS: not valid JSON"),
        ({"LIMITS": '{"rooms": "many"}'}, r"LIMITS\.rooms"),
        ({"ENVIRONMENT_NAME": None}, r"ENVIRONMENT_NAME"),
    ],
)
def test_a_bad_or_missing_variable_is_a_configuration_error_naming_it(
    variables: dict[str, str | None], message: str
) -> None:
    environ = {key: value for key, value in {**REQUIRED, **variables}.items() if value is not None}
    with pytest.raises(ConfigurationError, match=message):
        settings_from_environment(ProbeSettings, environ)
