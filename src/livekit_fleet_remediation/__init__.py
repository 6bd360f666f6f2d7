"""LiveKit Fleet Remediation for your own (Python) CDK app: ``FleetRemediation``, the construct,
``AgentServiceResources``, the existing resources it takes by reference, and ``EnvironmentConfig``,
the settings model its props are. The console commands (``lkfr``) live in
``livekit_fleet_remediation.cli``; importing this package does not load the CDK, so they start fast."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fleet_remediation import __version__

if TYPE_CHECKING:
    from livekit_fleet_remediation.config import EnvironmentConfig
    from livekit_fleet_remediation.fleet_remediation import FleetRemediation
    from livekit_fleet_remediation.references import AgentServiceResources

__all__ = ["AgentServiceResources", "EnvironmentConfig", "FleetRemediation", "__version__"]

# The construct pulls in aws_cdk (seconds to import); only a CDK app that names it pays for it.
_LAZY = {
    "AgentServiceResources": "livekit_fleet_remediation.references",
    "EnvironmentConfig": "livekit_fleet_remediation.config",
    "FleetRemediation": "livekit_fleet_remediation.fleet_remediation",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
