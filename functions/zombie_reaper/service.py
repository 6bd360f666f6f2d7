"""The reaper's pipeline: the shared invocation (``core.pipeline``) over the reaper's stages
(``work.ReaperStages``)."""

from fleet_remediation.core.pipeline import Pipeline
from zombie_reaper.work import ReaperStages

REAPER = Pipeline(ReaperStages())
run_reaper = REAPER.invoke
