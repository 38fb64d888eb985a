"""Creating and revoking standing grants (``skills.owner.grants``): acting, so only inside a ``ChangeGrant``
workflow. The listing is a client read (``list_grants``, in ``activities.store``).

A grant is checked here against what the worker knows: the tool must be one its catalog has (or one
the named skill declares), never a management tool; the skill must exist.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from activities.failures import application_error
from activities.ports import ToolNames
from adapters.store import Store
from skills.errors import FieldError, SkillNotFoundError, WorkflowInputError
from skills.naming import CHANGE_GRANT
from skills.owner.grants import GrantChange, GrantResult, expiry, grant_problems


class GrantActivities:
    def __init__(self, store: Store, tools: ToolNames) -> None:
        self.store = store
        self.tools = tools

    @activity.defn
    def change_grant(self, change: GrantChange) -> GrantResult:
        """Create or revoke a grant. Only a ``ChangeGrant`` workflow may ask: a grant is the owner's act."""
        if activity.info().workflow_type != CHANGE_GRANT:
            raise application_error(WorkflowInputError(f"change_grant runs only inside a {CHANGE_GRANT} workflow"))
        now = datetime.now(UTC)
        if change.action == "revoke":
            if change.grant_id is None:
                return GrantResult(ok=False, errors=[FieldError(field="grant", message="name the grant to revoke")])
            try:
                grant, revoked = self.store.approvals.revoke_grant(change.grant_id, now)
            except SkillNotFoundError as e:
                return GrantResult(ok=False, errors=[FieldError(field="grant", message=str(e))])
            if not revoked:
                return GrantResult(ok=False, grant=grant, errors=[FieldError(field="grant", message=(
                    f"grant {grant.id} was already revoked"))])
            activity.logger.info("grant %s revoked", grant.id)
            return GrantResult(ok=True, grant=grant)
        request = change.grant
        if request is None:
            return GrantResult(ok=False, errors=[FieldError(field="tool", message="name the tool to grant")])
        errors = grant_problems(request)
        if errors:
            return GrantResult(ok=False, errors=errors)
        skill = None
        if request.skill is not None:
            try:
                skill = self.store.skills.find_skill(request.skill, request.agent_id)
            except SkillNotFoundError as e:
                return GrantResult(ok=False, errors=[FieldError(field="skill", message=str(e))])
        known = set(self.tools.tool_names())
        if skill is not None:
            known |= {*skill.required_tools, *skill.approval_required_tools}
        if request.tool not in known:
            return GrantResult(ok=False, errors=[FieldError(field="tool", message=(
                f"no tool '{request.tool}' in the worker's catalog" + (f" or among skill '{skill.name}''s tools"
                                                                       if skill is not None else "")
                + ": see `skills catalog`"))])
        grant = self.store.approvals.add_grant(tool=request.tool, skill_id=skill.id if skill else None,
                                               skill_name=skill.name if skill else "", where=request.where, created_at=now,
                                               expires_at=expiry(now, request.minutes), created_by=request.by)
        activity.logger.info("grant %s: %s", grant.id, grant.tool)
        return GrantResult(ok=True, grant=grant)
