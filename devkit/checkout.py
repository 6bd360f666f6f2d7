"""The folders a checkout puts on the Python path (the Makefile's PYTHONPATH), for the child processes
the tests start: one list, so a package that moves is found by every one of them."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PATH_FOLDERS = ("agent", "functions", "layers/shared/python", "src", "")


def checkout_pythonpath() -> str:
    return os.pathsep.join(str(REPO_ROOT / folder) for folder in PATH_FOLDERS)
