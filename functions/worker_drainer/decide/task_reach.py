"""The per-task verdict, from the shared layer (``fleet_remediation.domain.task_reach``): the
drainer's tick and the responder reach one decision on the same evidence."""

from fleet_remediation.domain.group_verdict import TaskFacts as TaskFacts
from fleet_remediation.domain.task_reach import TaskReach as TaskReach
from fleet_remediation.domain.task_reach import TaskReachAssessment as TaskReachAssessment
from fleet_remediation.domain.task_reach import TaskVerdict as TaskVerdict
from fleet_remediation.domain.task_reach import among as among
from fleet_remediation.domain.task_reach import assess_task_reach as assess_task_reach
from fleet_remediation.domain.task_reach import binomial_tail as binomial_tail
