"""MkDocs hook: the configuration reference, generated from the settings models at every build.

``docs/reference/configuration.md`` holds markers; this hook replaces each with a table read from the
pydantic models that synth and the functions validate with
(``livekit_fleet_remediation.config.EnvironmentConfig`` for ``cdk.json``;
``fleet_remediation.contract.settings`` for the functions' Lambda environment): field, type,
default, limits and description, so the page cannot drift from the code.
"""

from __future__ import annotations

import enum
import json
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

REPO = Path(__file__).resolve().parents[2]
for folder in ("src", "layers/shared/python", "functions"):
    if str(REPO / folder) not in sys.path:
        sys.path.insert(0, str(REPO / folder))

MISSING = object()
LIMITS = {
    annotated_types.Ge: ("≥", "ge"),
    annotated_types.Gt: ("&gt;", "gt"),
    annotated_types.Le: ("≤", "le"),
    annotated_types.Lt: ("&lt;", "lt"),
    annotated_types.MinLen: ("length ≥", "min_length"),
    annotated_types.MaxLen: ("length ≤", "max_length"),
}


class Row(NamedTuple):
    path: str
    type: str
    default: str
    limits: str
    description: str


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(value: str) -> str:
    return f"`{value}`" if value else ""


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _inner(annotation: Any) -> list[Any]:
    """The types an annotation is made of (Optional, unions, tuples, Annotated unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _inner(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, tuple, list):
        return [t for arg in typing.get_args(annotation) if arg is not Ellipsis for t in _inner(arg)]
    return [annotation]


def type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args if a is not type(None)) + " (optional)"
    if origin in (tuple, list):
        return f"list of {type_name(args[0])}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " | ".join(f'"{m.value}"' for m in annotation)
    if _is_model(annotation):
        return "object"
    return {"AnyHttpUrl": "URL", "str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(
        getattr(annotation, "__name__", str(annotation)), getattr(annotation, "__name__", str(annotation))
    )


def _metadata(field: FieldInfo) -> Iterator[Any]:
    yield from field.metadata
    for arg in typing.get_args(field.annotation):
        for nested in typing.get_args(arg)[1:] if typing.get_origin(arg) is typing.Annotated else ():
            yield from getattr(nested, "metadata", [nested])


def limits(field: FieldInfo) -> str:
    found = []
    for item in _metadata(field):
        for kind, (symbol, attribute) in LIMITS.items():
            if isinstance(item, kind):
                found.append(f"{symbol} {getattr(item, attribute)}")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            found.append(f"matches `{pattern}`")
    return ", ".join(found)


def default_text(value: Any) -> str:
    if value is MISSING:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        return f'`"{value.value}"`'
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, BaseModel):
        return "its fields' defaults"
    if isinstance(value, tuple | list) and not value:
        return "`[]`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple | list | dict):
        return _code(json.dumps(_as_json(value)))
    return _code(str(value))


def _as_json(value: Any) -> Any:
    """A default as the configuration file writes it (enum values, models' fields), never a repr."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _as_json(item) for key, item in value.items()}
    return value if isinstance(value, int | float | str | bool) or value is None else str(value)


def rows(model: type[BaseModel], prefix: str = "", defaults: Any = MISSING) -> Iterator[Row]:
    """One row per field, nested models flattened into dotted paths (``[]``: each item of a list)."""
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True) if not field.is_required() else MISSING
        if defaults is not MISSING and defaults is not None:
            default = getattr(defaults, name)
        path = f"{prefix}{name}"
        yield Row(
            path, type_name(field.annotation), default_text(default), limits(field), field.description or ""
        )
        is_list = typing.get_origin(field.annotation) in (tuple, list)
        for kind in _inner(field.annotation):
            if _is_model(kind):
                child_defaults = default if isinstance(default, BaseModel) else MISSING
                yield from rows(kind, f"{path}[]." if is_list else f"{path}.", child_defaults)


def _fields(lines: list[str]) -> str:
    """A table of fields, wrapped so that on a phone each field is a block of its own
    (docs/assets/stylesheets/settings-fields.css)."""
    return '<div class="settings-fields" markdown>\n\n' + "\n".join(lines) + "\n\n</div>"


def table(model: type[BaseModel], prefix: str = "", exclude: frozenset[str] = frozenset()) -> str:
    lines = ["| field | type | default | limits | description |", "|---|---|---|---|---|"]
    for row in rows(model, prefix):
        if row.path.split(".", 1)[0].split("[", 1)[0] in exclude:
            continue
        cells = (f"`{row.path}`", row.type, row.default, row.limits, row.description)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return _fields(lines)


def environment_table() -> str:
    """One section per settings group (each nested model of the environment), so no table runs the
    length of the page on a phone; the environment's own fields first."""
    from livekit_fleet_remediation.config import EnvironmentConfig

    groups = [
        name
        for name, field in EnvironmentConfig.model_fields.items()
        if any(_is_model(kind) for kind in _inner(field.annotation))
    ]
    sections = [table(EnvironmentConfig, exclude=frozenset(groups))]
    for name in groups:
        only = frozenset(EnvironmentConfig.model_fields) - {name}
        sections.append(f"### {name}\n\n{table(EnvironmentConfig, exclude=only)}")
    return "\n\n".join(sections)


def function_tables() -> str:
    """Each function's own settings: its Lambda environment variables (upper-case field names; a
    section such as ``REAPER`` is JSON of the ``cdk.json`` section of the same name)."""
    from fleet_remediation.contract import settings

    sections = []
    models = (settings.ReaperSettings, settings.TtsReachSettings, settings.DrainerSettings)
    # The scheduled drill exists only where drills.schedule is set.
    for model in (*models, settings.ScheduledDrillSettings):
        variables = ["| variable | type | default | limits | description |", "|---|---|---|---|---|"]
        for name, field in model.model_fields.items():
            default = MISSING if field.is_required() else field.get_default(call_default_factory=True)
            kind = (
                "JSON object (the section above)"
                if _is_model(field.annotation)
                else type_name(field.annotation)
            )
            cells = (f"`{name.upper()}`", kind, default_text(default), limits(field), field.description or "")
            variables.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        sections.append(f"### {model.function.value}\n\n" + _fields(variables))
    return "\n\n".join(sections)


def budget_table() -> str:
    """Every fixed AWS call budget in ``contract/budgets.py``: timeouts, attempts, worst case."""
    from fleet_remediation.contract import budgets

    lines = ["| budget | service | connect / read | attempts | worst case |", "|---|---|---|---|---|"]
    for name, budget in vars(budgets).items():
        if isinstance(budget, budgets.AwsCallBudget):
            timeouts = f"{budget.connect_timeout_seconds:g} s / {budget.read_timeout_seconds:g} s"
            mode = ", adaptive" if budget.adaptive else ""
            cells = (
                f"`{name}`",
                budget.service,
                timeouts,
                f"{budget.attempts}{mode}",
                f"{budget.worst_case_seconds:g} s",
            )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


MARKERS = {
    "<!-- generated: call budgets -->": budget_table,
    "<!-- generated: cdk.json environment -->": environment_table,
    "<!-- generated: function settings -->": function_tables,
}


def render(markdown: str) -> str:
    for marker, generate in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return render(markdown)
