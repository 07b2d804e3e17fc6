"""The workbench's persistence: users, roles, groups, invites, tokens, prompts, skills,
selections, chat sessions."""

from youyou.workbench.store.accounts import AccountBusy
from youyou.workbench.store.groups import GroupNameTaken
from youyou.workbench.store.records import (
    ADMIN,
    MEMBER,
    ChatSessionRecord,
    GroupRecord,
    InviteUnusable,
    OwnerAssets,
    PromptRecord,
    RemovedCounts,
    SelectionRecord,
    SessionProjection,
    SkillNameTaken,
    SkillRecord,
    UsernameTaken,
    UserRecord,
)
from youyou.workbench.store.repository import WorkbenchStore, migrate_workbench

__all__ = [
    "ADMIN",
    "MEMBER",
    "AccountBusy",
    "ChatSessionRecord",
    "GroupNameTaken",
    "GroupRecord",
    "InviteUnusable",
    "OwnerAssets",
    "PromptRecord",
    "RemovedCounts",
    "SelectionRecord",
    "SessionProjection",
    "SkillNameTaken",
    "SkillRecord",
    "UserRecord",
    "UsernameTaken",
    "WorkbenchStore",
    "migrate_workbench",
]
