"""The checkout's standalone CDK app (cdk.json's ``"app"``): ``livekit_fleet_remediation.standalone``,
which an installed package runs as ``python -m livekit_fleet_remediation.standalone``."""

from __future__ import annotations

import sys

from livekit_fleet_remediation.standalone import main

if __name__ == "__main__":
    main(sys.argv)
