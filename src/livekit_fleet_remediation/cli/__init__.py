"""The console commands, ``lkfr <command>`` (or ``python -m livekit_fleet_remediation.cli``): one module
per command, each with its own ``main(argv) -> exit status``; ``main.py`` dispatches."""
