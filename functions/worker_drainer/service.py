"""The drainer's pipeline: the shared invocation (``core.pipeline``) over the drainer's stages
(``work.DrainerStages``)."""

from fleet_remediation.core.pipeline import Pipeline
from worker_drainer.work import DrainerStages

DRAINER = Pipeline(DrainerStages())
run_drainer = DRAINER.invoke
