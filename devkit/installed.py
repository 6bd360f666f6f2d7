"""The packages as a team gets them: `make dist`'s wheels installed into a fresh virtual environment
outside the repository, offline (``pip --no-index`` from the wheelhouse `make setup` filled), and
commands run there with no checkout on the path."""

from __future__ import annotations

import os
import subprocess
import venv
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DIST = REPO_ROOT / "dist"
WHEELHOUSE = REPO_ROOT / "build" / "wheelhouse"
MAKE_TIMEOUT_SECONDS = 600
INSTALL_TIMEOUT_SECONDS = 600
# What a checkout's shell carries that a team's machine has not: none of it reaches the commands.
CHECKOUT_VARIABLES = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")


class InstallError(Exception):
    """The wheels could not be built or installed; the message holds the tool's own output."""


@dataclass(frozen=True)
class InstalledEnvironment:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def environ(self, **extra: str) -> dict[str, str]:
        """The process environment without the checkout's paths, the venv's bin first on PATH."""
        clean = {key: value for key, value in os.environ.items() if key not in CHECKOUT_VARIABLES}
        clean["PATH"] = f"{self.root / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
        return {**clean, **extra}

    def run(
        self, args: list[str], *, cwd: Path, timeout: float, **extra_env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            cwd=cwd,
            env=self.environ(**extra_env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def built_wheels() -> dict[str, Path]:
    """`make dist`, then its wheels by distribution name; make rebuilds only what changed."""
    done = subprocess.run(
        ["make", "--no-print-directory", "dist"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=MAKE_TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise InstallError(
            f"make dist failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    wheels = {path.name.split("-", 1)[0]: path for path in DIST.glob("*.whl")}
    if not wheels:
        raise InstallError(f"make dist wrote no wheel into {DIST}")
    return wheels


def range_end(end: str) -> tuple[Path, Path]:
    """The lock file of one end ("lowest", "highest") of the dependency ranges, and its wheelhouse."""
    return REPO_ROOT / "requirements" / f"wheelhouse-{end}.lock", REPO_ROOT / "build" / f"wheelhouse-{end}"


def install(root: Path, *requirements: str | Path, wheelhouse: Path = WHEELHOUSE) -> InstalledEnvironment:
    """A fresh virtual environment at ``root`` with ``requirements`` (wheel paths, pins, or ``-r``
    and a lock file) installed from ``wheelhouse`` only: a dependency missing from it fails here, as
    it would offline."""
    if not (wheelhouse / ".filled").exists():
        raise InstallError(f"{wheelhouse} is not filled: run `make setup` (or `make wheelhouse`)")
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    installed = InstalledEnvironment(root)
    done = installed.run(
        [
            str(installed.python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            # Compiling every module of aws-cdk-lib and botocore takes most of an install's time; the
            # tests import a few of them, which Python compiles when first imported.
            "--no-compile",
            "--disable-pip-version-check",
            "--find-links",
            str(wheelhouse),
            *map(str, requirements),
        ],
        cwd=root,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise InstallError(f"pip install {' '.join(map(str, requirements))} failed:\n{done.stderr[-4000:]}")
    return installed
