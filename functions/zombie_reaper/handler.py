"""Lambda entry point: the shared handler over the reaper's pipeline."""

from fleet_remediation.core.handler import lambda_handler_for
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.service import REAPER

lambda_handler = lambda_handler_for("zombie_reaper", REAPER, ReaperDependencies.from_environment)
