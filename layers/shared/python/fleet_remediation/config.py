"""Configuration models shared by the CDK app (validated at synth) and the functions (validated on
cold start). One model, two places: a value the stack accepted is a value the function accepts."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fleet_remediation.errors import ConfigurationError

Minutes = Annotated[int, Field(ge=1, le=24 * 60)]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in cdk.json must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return pattern


class RoomRule(StrictModel):
    """One ordered rule: the first rule whose ``name_pattern`` matches a room's whole name applies."""

    name_pattern: str = Field(description="Regular expression matched against the whole room name.")
    max_age_minutes: Minutes | None = Field(default=None, description="Max age for matching rooms.")
    protected: bool = Field(default=False, description="Matching rooms are never reaped.")
    description: str = ""

    _check_pattern = field_validator("name_pattern")(_check_regex)

    @model_validator(mode="after")
    def _protected_xor_age(self) -> RoomRule:
        if self.protected == (self.max_age_minutes is not None):
            raise ValueError("a rule sets exactly one of 'protected: true' or 'max_age_minutes'")
        return self


class ReaperPolicy(StrictModel):
    """What the zombie reaper may delete, and how much per run."""

    managed_room_pattern: str = Field(
        default=".*", description="Rooms whose whole name does not match are ignored entirely."
    )
    max_age_minutes: Minutes = Field(default=60, description="Default max room age (incident: P0, 1 h).")
    rules: tuple[RoomRule, ...] = ()
    max_deletions_per_run: int = Field(default=20, ge=1, le=1000)
    delete_concurrency: int = Field(default=5, ge=1, le=50)

    _check_pattern = field_validator("managed_room_pattern")(_check_regex)


class FunctionSettings(StrictModel):
    """Environment variables every function reads (names upper-cased in the Lambda environment)."""

    environment_name: str = Field(min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9-]*$")
    mode_parameter_name: str = Field(min_length=1)
    notification_topic_arn: str = Field(min_length=1)
    runbook_base_url: AnyHttpUrl
    function_timeout_seconds: float = Field(default=60, gt=0, le=900)


class ReaperSettings(FunctionSettings):
    livekit_url: AnyHttpUrl
    livekit_secret_id: str = Field(min_length=1)
    livekit_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    reaper_policy: ReaperPolicy

    @field_validator("reaper_policy", mode="before")
    @classmethod
    def _parse_policy_json(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value


SettingsT = TypeVar("SettingsT", bound=BaseModel)


def settings_from_environment(model: type[SettingsT], environ: Mapping[str, str] | None = None) -> SettingsT:
    """Build ``model`` from upper-cased environment variables; errors name the variable."""
    source = os.environ if environ is None else environ
    wanted = {name: source[name.upper()] for name in model.model_fields if name.upper() in source}
    try:
        return model.model_validate(wanted)
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, upper=True)) from exc
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"a JSON environment variable is not valid JSON: {exc}") from exc


def describe_validation_error(exc: ValidationError, *, upper: bool = False, prefix: str = "") -> str:
    """One line per problem, each naming the field by its full dotted path."""
    lines = []
    for error in exc.errors():
        path = ".".join(str(part) for part in error["loc"])
        if upper and error["loc"]:
            head, *rest = [str(part) for part in error["loc"]]
            path = ".".join([head.upper(), *rest])
        lines.append(f"{prefix}{path}: {error['msg']}")
    return "; ".join(lines)


def join_url(base: AnyHttpUrl | str, path: str) -> str:
    """Join a runbook base URL and a relative document path with exactly one slash."""
    return f"{str(base).rstrip('/')}/{path.lstrip('/')}"
