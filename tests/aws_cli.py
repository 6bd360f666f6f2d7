"""A stand-in for the AWS CLI in tests: a docs line ``aws SERVICE OPERATION --option value ...`` run
through botocore (on moto), with the CLI's option names, ``--query`` and ``--output text``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import jmespath  # type: ignore[import-untyped]
from botocore import xform_name


class AwsCli:
    """Runs an ``aws SERVICE OPERATION --option value ...`` line through botocore, as the AWS CLI
    maps it: option names are the operation's input members in the CLI's spelling, list members take
    the words up to the next option, ``--query`` is JMESPath and ``--output text`` prints a scalar."""

    GLOBAL = {"--query", "--output", "--region", "--max-items"}

    def __init__(self, session: boto3.session.Session) -> None:
        self.session = session

    def run(self, words: list[str]) -> str:
        service, operation = words[1], words[2]
        client = self.session.client(service)  # type: ignore[call-overload]
        model = client.meta.service_model
        (name,) = [n for n in model.operation_names if xform_name(n, "-") == operation]
        options = self._options(words[3:])
        members = model.operation_model(name).input_shape.members
        names = {xform_name(member, "-"): member for member in members}
        params = {names[o]: self._value(members[names[o]], v) for o, v in options.items() if o in names}
        # A boolean flag is on by its name and off by "--no-" before it, as the CLI reads it.
        params |= {names[o[3:]]: False for o in options if o.startswith("no-") and o[3:] in names}
        unknown = {o.removeprefix("no-") for o in options} - set(names) - {o[2:] for o in self.GLOBAL}
        assert not unknown, f"{' '.join(words[:3])}: no such option {sorted(unknown)}"
        result = getattr(client, xform_name(name))(**params)
        result.pop("ResponseMetadata", None)
        if "query" in options:
            result = jmespath.search(options["query"][0], result)
        if options.get("output") == ["text"] and not isinstance(result, dict | list):
            return str(result)
        return json.dumps(result, default=str)

    @staticmethod
    def _options(words: list[str]) -> dict[str, list[str]]:
        options: dict[str, list[str]] = {}
        current = None
        for word in words:
            if word.startswith("--"):
                current = word[2:]
                options[current] = []
            else:
                assert current is not None, f"a value without an option: {word}"
                options[current].append(word)
        return options

    @staticmethod
    def _value(shape: Any, values: list[str]) -> Any:
        if shape.type_name == "list":
            return values
        if shape.type_name == "boolean" and not values:
            return True
        (value,) = values
        converters: dict[str, Callable[[str], Any]] = {"integer": int, "long": int, "boolean": "true".__eq__}
        return converters.get(shape.type_name, str)(value)
