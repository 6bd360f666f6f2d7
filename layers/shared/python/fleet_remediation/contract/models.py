"""Building blocks of every configuration model: strict models, bounded minutes, regex checks, and
error messages that name the field by its full path."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Minutes = Annotated[int, Field(ge=1, le=24 * 60)]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in cdk.json must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return pattern


def describe_validation_error(exc: ValidationError, *, upper: bool = False, prefix: str = "") -> str:
    """One line per problem, each naming the field by its full dotted path (``upper``: the first
    segment as the environment variable that carries it)."""
    lines = []
    for error in exc.errors():
        parts = [str(part) for part in error["loc"]]
        if upper and parts:
            parts[0] = parts[0].upper()
        # A check across fields has no location of its own: name the model itself.
        where = f"{prefix}{'.'.join(parts)}" if parts else prefix.rstrip(".")
        lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)
