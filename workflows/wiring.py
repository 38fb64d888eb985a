"""The engine's workflow types, as the worker registers them."""

from __future__ import annotations

from workflows.chat import ChatTurn
from workflows.digests import DeliveryDigest
from workflows.events import EmitEvent
from workflows.grants import ChangeGrant
from workflows.maintenance import Maintenance
from workflows.manage import ChangeSkill, RegisterSkill, RegisterSkills
from workflows.proposals import DecideChange
from workflows.run import SkillRun
from workflows.sync import SyncSkillFiles
from workflows.trust import TrustSkill

WORKFLOWS = [RegisterSkill, RegisterSkills, ChangeSkill, SkillRun, Maintenance, SyncSkillFiles, ChatTurn, EmitEvent,
             TrustSkill, DecideChange, DeliveryDigest, ChangeGrant]
