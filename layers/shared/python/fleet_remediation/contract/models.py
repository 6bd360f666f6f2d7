"""Building blocks of every configuration model: strict models, bounded minutes, regex checks, and
error messages that name the field by its full path."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Minutes = Annotated[int, Field(ge=1, le=24 * 60)]

# What an error message may quote of an input (a key, a value, a name): enough to recognise it, never
# the whole of a 1 MB field.
MAX_ECHO_CHARS = 80
# A validation error lists at most this many problems, each explained in at most this many characters
# (pydantic's messages never quote the input; the checks' own explain the rule they enforce).
MAX_LISTED_PROBLEMS = 10
MAX_PROBLEM_CHARS = 600


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in cdk.json must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return pattern


def excerpt(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``value`` as an error message may quote it: at most ``limit`` characters of it and how many
    more there were."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...(+{len(text) - limit} chars)"


def describe_validation_error(exc: ValidationError, *, upper: bool = False, prefix: str = "") -> str:
    """One line per problem, each naming the field by its full dotted path (``upper``: the first
    segment as the environment variable that carries it). Paths and messages are quoted as
    excerpts: a bad input's key or value may be of any size."""
    errors = exc.errors(include_input=False, include_url=False)
    lines = []
    for error in errors[:MAX_LISTED_PROBLEMS]:
        parts = [excerpt(str(part)) for part in error["loc"]]
        if upper and parts:
            parts[0] = parts[0].upper()
        # A check across fields has no location of its own: name the model itself.
        where = f"{prefix}{'.'.join(parts)}" if parts else prefix.rstrip(".")
        lines.append(f"{where}: {excerpt(error['msg'], MAX_PROBLEM_CHARS)}")
    if len(errors) > MAX_LISTED_PROBLEMS:
        lines.append(f"and {len(errors) - MAX_LISTED_PROBLEMS} more problems")
    return "; ".join(lines)
