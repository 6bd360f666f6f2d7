"""LiveKit Fleet Remediation for your own (Python) CDK app: ``FleetRemediation``, the construct, and
``EnvironmentConfig``, the settings model its props are. The console commands (``lkfr``) live in
``livekit_fleet_remediation.cli``; importing this package does not load the CDK, so they start fast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fleet_remediation import __version__

if TYPE_CHECKING:
    from livekit_fleet_remediation.config import EnvironmentConfig

__all__ = ["EnvironmentConfig", "__version__"]


def __getattr__(name: str) -> Any:
    # The construct pulls in aws_cdk (seconds to import); only a CDK app that names it pays for it.
    if name == "EnvironmentConfig":
        from livekit_fleet_remediation.config import EnvironmentConfig

        return EnvironmentConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
