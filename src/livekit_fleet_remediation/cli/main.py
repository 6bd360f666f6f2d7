"""``lkfr``: the operator's console commands, after ``pip install`` (no checkout, no PYTHONPATH).

    lkfr plan reaper|drainer --env NAME     what a function would do now (always a dry run)
    lkfr replay --log FILE --env NAME       the whole loop over exported logs, in simulated time
    lkfr backtest --log FILE --env NAME     the detection alarms over exported logs
    lkfr audit --env NAME --hours N         what the functions did: their reports and the ledger
    lkfr undo --env NAME --task ID          give a cordoned task back to the fleet (the drainer's undo)
    lkfr redrive --function NAME            re-run the events parked in a function's dead-letter queue
    lkfr drill --env NAME --fault F         fake one failure on one task; pass if the product answers
    lkfr cost --env NAME --tasks N --responses-per-minute R   the stack's monthly bill, before deploying
    lkfr validate [--env NAME]              check the configuration; --schema prints its JSON Schema
    lkfr completion bash|zsh                a shell completion script (source it from your shell's rc)

Every command but redrive reads the configuration from ``--config PATH`` (default: $LKFR_CONFIG,
else ./environments.json), or, with the construct in your own CDK app, from ``--stack NAME`` (your
deployed stack's functions) or ``--app "python app.py"`` (your app, synthesized); and takes ``--help``
and ``--json``. Exit status: 0 ok, 1 a typed failure (one line on stderr), 2 bad arguments.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from livekit_fleet_remediation.cli.common import EXIT_USAGE, plain

# Each command's module, imported only when it runs: ``lkfr --help`` loads none of them.
COMMANDS = {
    "plan": "livekit_fleet_remediation.cli.plan",
    "replay": "livekit_fleet_remediation.cli.replay",
    "backtest": "livekit_fleet_remediation.cli.backtest",
    "audit": "livekit_fleet_remediation.cli.audit",
    "undo": "livekit_fleet_remediation.cli.undo",
    "redrive": "livekit_fleet_remediation.cli.redrive",
    "drill": "livekit_fleet_remediation.cli.drill",
    "cost": "livekit_fleet_remediation.cli.cost",
    "validate": "livekit_fleet_remediation.cli.validate",
    "completion": "livekit_fleet_remediation.cli.completion",
}


def _usage() -> str:
    return f"usage: lkfr [--version] {{{','.join(COMMANDS)}}} ...\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(_usage() + plain((__doc__ or "").split("\n", 2)[2]))
        return 0 if args else EXIT_USAGE
    if args[0] == "--version":
        from fleet_remediation import __version__

        print(f"lkfr {__version__}")
        return 0
    if args[0] not in COMMANDS:
        sys.stderr.write(_usage() + f"lkfr: error: unknown command {args[0]!r}\n")
        return EXIT_USAGE
    command = importlib.import_module(COMMANDS[args[0]])
    try:
        return int(command.main(args[1:]))
    except SystemExit as exc:  # argparse's exit for --help (0) or a bad argument (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
