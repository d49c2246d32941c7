"""Session workspaces: each session in its own git worktree, with diff, commit, merge and
discard, and a boot reconcile that prunes the worktrees of sessions that are gone."""

from actors.workspace.config import WorkspacesConfig as WorkspacesConfig
from actors.workspace.git import Git as Git
from actors.workspace.reconcile import Pruned as Pruned
from actors.workspace.records import WorkspaceRecord as WorkspaceRecord
from actors.workspace.service import Workspaces as Workspaces
