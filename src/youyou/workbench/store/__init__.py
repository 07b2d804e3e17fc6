"""The workbench's persistence: users, tokens, prompts, skills, selections, chat sessions."""

from youyou.workbench.store.records import (
    ChatSessionRecord,
    OwnerAssets,
    PromptRecord,
    SelectionRecord,
    SessionProjection,
    SkillNameTaken,
    SkillRecord,
    UsernameTaken,
    UserRecord,
)
from youyou.workbench.store.repository import WorkbenchStore, migrate_workbench

__all__ = [
    "ChatSessionRecord",
    "OwnerAssets",
    "PromptRecord",
    "SelectionRecord",
    "SessionProjection",
    "SkillNameTaken",
    "SkillRecord",
    "UserRecord",
    "UsernameTaken",
    "WorkbenchStore",
    "migrate_workbench",
]
