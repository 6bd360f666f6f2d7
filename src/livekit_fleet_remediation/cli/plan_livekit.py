"""Where the plan's LiveKit URL and key come from, said in its errors: ``LIVEKIT_URL`` (LiveKit's
usual ``wss://`` form included) or cdk.json's ``livekit_url``; ``LIVEKIT_API_KEY`` and
``LIVEKIT_API_SECRET`` or the Secrets Manager secret cdk.json names."""

from __future__ import annotations

import os
from collections.abc import Callable

from fleet_remediation.adapters.livekit_rooms import (
    LiveKitCredentials,
    LiveKitRoomService,
    RoomService,
    room_service_factory,
)
from fleet_remediation.contract.settings import LiveKitSettings
from fleet_remediation.core.errors import ConfigurationError
from livekit_fleet_remediation.cli.common import CommandFailed
from livekit_fleet_remediation.config import EnvironmentConfig


class PlanFailed(CommandFailed):
    """A typed failure before the handler ran (configuration, credentials, a missing resource)."""


# LiveKit's clients take ws:// and wss:// URLs; its server API answers the same host over HTTP.
_API_SCHEMES = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


def livekit_url(config: EnvironmentConfig) -> str:
    """``LIVEKIT_URL`` (ws, wss, http or https) as the API's http(s) URL, else the configuration's; a bad
    value is named by where it came from."""
    raw = os.environ.get("LIVEKIT_URL")
    if not raw:
        return str(config.livekit_url)
    scheme, separator, rest = raw.partition("://")
    api_scheme = _API_SCHEMES.get(scheme.lower())
    if not separator or api_scheme is None or not rest.strip("/"):
        raise PlanFailed(
            ConfigurationError.code,
            f"LIVEKIT_URL (environment variable) {raw!r} is not a LiveKit URL: use wss://HOST, "
            "ws://HOST:7880, https://HOST or http://HOST:7880, or unset it to use the configuration's "
            "livekit_url",
        )
    return f"{api_scheme}://{rest}"


def credentials_source(env: str, config: EnvironmentConfig, where: str) -> str:
    """Where the LiveKit key came from; ``where``: the file, stack or app the configuration was read from."""
    if os.environ.get("LIVEKIT_API_KEY") and os.environ.get("LIVEKIT_API_SECRET"):
        return "the key and secret came from LIVEKIT_API_KEY and LIVEKIT_API_SECRET (environment variables)"
    return (
        f"the key and secret came from the secret {config.livekit_secret_name} "
        f"({where}: environments.{env}.livekit_secret_name)"
    )


def rooms_factory(function_settings: LiveKitSettings, timeout: float) -> Callable[[], RoomService]:
    url = str(function_settings.livekit_url)
    key, secret = os.environ.get("LIVEKIT_API_KEY"), os.environ.get("LIVEKIT_API_SECRET")
    if key and secret:
        credentials = LiveKitCredentials.model_validate({"api_key": key, "api_secret": secret})
        return lambda: LiveKitRoomService(url, credentials, timeout)
    return room_service_factory(url, function_settings.livekit_secret_id, timeout)
