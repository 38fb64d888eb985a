"""ChangeGrant: the owner creates or revokes a standing grant (``skills grant``, ``skills revoke``).

A change like any other, so it runs as a workflow (visible in Temporal, the only road to the
``change_grant`` activity). A refusal (an unknown tool, a management tool, no such skill) comes back as
the result; the workflow fails only on a fault.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

from skills.naming import CHANGE_GRANT

with workflow.unsafe.imports_passed_through():
    from activities.grants import GrantActivities
    from skills.errors import FieldError
    from skills.owner.grants import GrantChange, GrantResult
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, STORE


@workflow.defn(name=CHANGE_GRANT, failure_exception_types=FAIL_ON_BUG)
class ChangeGrant:
    @workflow.run
    async def run(self, change: GrantChange) -> GrantResult:
        what = change.grant.tool if change.grant is not None else f"grant {change.grant_id}"
        try:
            return await workflow.execute_activity_method(
                GrantActivities.change_grant, change, summary=f"{change.action} {what}", **STORE)
        except ActivityError as e:
            return GrantResult(ok=False, errors=[FieldError(field="grant", message=activity_cause(e))])
