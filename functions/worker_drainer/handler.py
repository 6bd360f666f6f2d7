"""Lambda entry point: the shared handler over the drainer's pipeline."""

from fleet_remediation.core.handler import lambda_handler_for
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.service import DRAINER

lambda_handler = lambda_handler_for("worker_drainer", DRAINER, DrainerDependencies.from_environment)
