"""``python -m livekit_fleet_remediation.cli ...``: the same commands as ``lkfr``."""

import sys

from livekit_fleet_remediation.cli.main import main

sys.exit(main())
