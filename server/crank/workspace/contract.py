"""The wire contract between Crank and its clients, as types: the one statement of it.

Every ``crank/*`` request's params and result, every notification, every request the
server sends (the permission question and its answer, ``crank/saveDocument``) and every
event is a TypedDict here or imported here from the module that makes it (the events
from ``crank.agent.events`` and ``crank.workspace.stream``, the messages from
``crank.agent.messages``, the previews from ``crank.tools.context``): nothing is
written twice. ``python -m crank.workspace.schema`` turns this module into
``docs/protocol.schema.json`` and that schema into ``vscode-client/src/protocol/types.ts``;
a test fails when either is stale, and another checks docs/protocol.md's tables name
exactly the methods and events listed here.

The shapes are the ones docs/protocol.md fixes (extend, never rename): a field added to
a result is ``NotRequired`` so an older client still reads the answer.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from crank.agent.events import ContextUsage, QueueState
from crank.agent.harness import QueueKind
from crank.agent.messages import ImageBlock, Message
from crank.agent.tools import ResultShown, ToolKind
from crank.mcp.manager import McpServerState
from crank.prompt.builder import Source
from crank.session.index import SessionInfo
from crank.tools.context import CommandPreview, DiffPreview, PathPreview
from crank.tools.details import CommandDetails, DeclinedDetails, FileChangeDetails, ReadDetails
from crank.tools.sandbox import SandboxMode

from .commands import CommandKind
from .host import WhileRunning
from .mcp import McpAction
from .permissions import PermissionDecision, PermissionMode
from .stream import EventParams, WireEvent

__all__ = [
    "EVENT_UNION",
    "NOTIFICATIONS",
    "REQUESTS",
    "SERVER_REQUESTS",
    "PermissionRequest",
    "PermissionResponse",
]

# -- shared pieces ---------------------------------------------------------------------


class Position(TypedDict):
    line: int
    character: int


class Range(TypedDict):
    """An LSP range (UTF-16 positions)."""

    start: Position
    end: Position


class ContextItem(TypedDict):
    """A file (or a range of one) the prompt points at; with ``diagnostics`` (the
    editor's for that file, ``@problems``), its problems instead of its text."""

    uri: str
    range: NotRequired[Range]
    diagnostics: NotRequired[list[LspDiagnostic]]


class InlineImage(TypedDict):
    """An image attached by value: base64 ``data``."""

    mimeType: str
    data: str
    name: NotRequired[str]


class PathImage(TypedDict):
    """An image attached by a path the server reads (inside the workspace)."""

    path: str
    name: NotRequired[str]


class ModelRef(TypedDict):
    api: str
    id: str


class ModelInfo(ModelRef):
    """One entry of ``crank/models``: who lists it, and the window Crank uses for it."""

    contextWindow: int
    source: Literal["server", "catalog", "config"]


class CurrentModel(ModelRef):
    contextWindow: NotRequired[int]
    baseUrl: NotRequired[str]
    """The endpoint the model is asked at, credentials taken out (additive): absent while
    no provider is configured and for the scripted model. What a client checks is
    listening (Neovim's ``:checkhealth crank``), whichever layer set it."""


class SandboxState(TypedDict):
    """How the agent's commands are confined (docs/protocol.md "Sandbox")."""

    mode: SandboxMode
    network: bool
    available: bool
    confined: bool
    detail: str


class ViewRepairs(TypedDict):
    """What the view repaired on the way from the record to the model's request."""

    interruptedResults: int
    droppedOrphanResults: int
    droppedDuplicateResults: int
    droppedEmptyReplies: int


class CommandInfo(TypedDict):
    """One entry of ``crank/commands``: typed as ``/name args``; ``name`` has no slash."""

    name: str
    description: str
    kind: CommandKind
    argumentHint: NotRequired[str]


class TreeEntry(TypedDict):
    """One entry of the session file's tree, in file order."""

    id: str
    parentId: str | None
    type: str
    role: NotRequired[str]
    preview: NotRequired[str]
    label: NotRequired[str]


class ToolInfoJson(TypedDict):
    """What a tool says about itself (``crank.agent.tools.ToolInfo``), so a client never
    matches tool names: its kind (ACP's vocabulary), a label, which argument says what a
    call does, how its result is summed up, whether it changes files through the edit
    path, and the name of its ``details`` type in this schema."""

    name: str
    kind: ToolKind
    label: str
    shows: NotRequired[str]
    result: ResultShown
    editsFiles: bool
    details: NotRequired[str]


# -- params ----------------------------------------------------------------------------


class WorkspaceParams(TypedDict):
    """Every ``crank/*`` request may name its workspace folder (its URI); it may be left
    out when only one folder is open."""

    workspace: NotRequired[str]


class SessionParams(WorkspaceParams):
    """A request about the active session may name it; another id is refused (1002)."""

    sessionId: NotRequired[str]


class PromptParams(SessionParams):
    text: str
    context: NotRequired[list[ContextItem]]
    images: NotRequired[list[InlineImage | PathImage]]
    whileRunning: NotRequired[WhileRunning]


class QueueParams(SessionParams):
    """``crank/steer`` and ``crank/followUp``."""

    text: str
    images: NotRequired[list[InlineImage | PathImage]]


class RemoveQueuedParams(SessionParams):
    queue: QueueKind
    index: int
    text: NotRequired[str]


class ImageParams(SessionParams):
    sha256: str


class OpenSessionParams(WorkspaceParams):
    sessionId: str


class BranchParams(SessionParams):
    entryId: str
    summarize: NotRequired[bool]


class CompactParams(SessionParams):
    instructions: NotRequired[str]


class MessagesParams(SessionParams):
    """Either of ``limit`` and ``before`` asks for one page of the transcript: at most
    ``limit`` messages (at least 1; default all) ending before position ``before``
    (0-based; default the end, a larger one is taken as the end). A page never begins
    with a tool result: it starts earlier, at the message holding the call, so it can
    be a few results longer than ``limit``."""

    limit: NotRequired[int]
    before: NotRequired[int]


class SetModelParams(SessionParams):
    api: str
    id: str


class SetPermissionModeParams(WorkspaceParams):
    mode: PermissionMode


# -- results ---------------------------------------------------------------------------


class PromptResult(TypedDict):
    """A run started (``runId``), a message queued (``queued``), or a built-in command
    performed (``command`` and ``result``, what that command's own request answers)."""

    sessionId: str
    runId: NotRequired[str]
    queued: NotRequired[Literal["steer", "followUp"]]
    command: NotRequired[str]
    result: NotRequired[Any]
    imagesOmitted: NotRequired[str]
    """A sentence: the model takes no images, so the prompt's were left out."""


class CommandsResult(TypedDict):
    commands: list[CommandInfo]


class QueueResult(QueueState):
    """The queues after ``crank/steer`` or ``crank/followUp``."""

    imagesOmitted: NotRequired[str]


class RemoveQueuedResult(QueueState):
    removed: str | None
    """The text taken out, or null when it was already gone (taken by the run)."""


class AbortResult(TypedDict):
    stopReason: Literal["aborted", "idle"]


class StateResult(TypedDict):
    sessionId: str
    running: bool
    runId: NotRequired[str]
    """Only while a run is active."""
    model: CurrentModel
    permissionMode: PermissionMode
    trusted: bool
    sandbox: SandboxState
    queue: QueueState
    usage: ContextUsage
    sessionFile: str
    seq: int
    """The last seq the server sent for the session (from 0 again in a new process)."""
    configError: NotRequired[str]
    """Only while no provider is configured: what to set."""
    viewRepairs: NotRequired[ViewRepairs]
    branched: NotRequired[bool]
    """Whether the session has more than one branch (an entry went back: ``crank/branch``),
    so a client need not read ``crank/tree`` to list one. Absent when only reading the
    history an open left unread would tell (a compaction written before ``forkedBefore``),
    and from a server before it."""
    tools: NotRequired[list[ToolInfoJson]]
    """The tools the next run offers, each as it describes itself."""
    mcp: NotRequired[list[McpServerState]]
    """Only when an MCP server is configured (docs/mcp.md)."""


class MessagesResult(TypedDict):
    messages: list[Message]
    start: NotRequired[int]
    """Only for a page: the position of its first message in the whole transcript (0:
    nothing earlier to ask for)."""
    total: NotRequired[int]
    """Only for a page: how many messages the whole transcript holds."""


class ImageResult(TypedDict):
    mimeType: str
    data: str
    bytes: int


class SessionsResult(TypedDict):
    sessions: list[SessionInfo]


class SessionResult(TypedDict):
    """``crank/newSession`` and ``crank/openSession``."""

    sessionId: str


class TreeResult(TypedDict):
    tip: str | None
    entries: list[TreeEntry]


class BranchResult(TypedDict):
    tip: str | None


class CompactResult(TypedDict):
    compacted: bool
    tokensBefore: NotRequired[int]
    tokensAfter: NotRequired[int]
    reason: NotRequired[str]


class ModelsResult(TypedDict):
    models: list[ModelInfo]


class SetModelResult(TypedDict):
    model: ModelRef


class SystemPromptResult(TypedDict):
    text: str
    hash: str
    sources: list[Source]


class SetPermissionModeResult(TypedDict):
    mode: PermissionMode


# -- the server's own requests and notifications ---------------------------------------


class PermissionRequest(TypedDict):
    """``crank/requestPermission`` params: one tool call the user is asked about."""

    workspace: str
    sessionId: str
    runId: str
    toolCallId: str
    toolName: str
    """The tool, or the pseudo tool ``outside`` for a path outside the workspace."""
    arguments: dict[str, Any]
    preview: NotRequired[DiffPreview | CommandPreview | PathPreview]
    warning: NotRequired[str]
    """What to know before answering, for a person: the command would run unconfined,
    a remembered rule names the program but does not cover this command, or both."""
    unconfined: NotRequired[bool]
    """True when the command would run unconfined (the sandbox is wanted but missing);
    ``warning`` then says so. A client that decides by itself reads this, not
    ``warning``."""


class PermissionResponse(TypedDict):
    """``crank/requestPermission`` result."""

    decision: PermissionDecision
    reason: NotRequired[str]


class SaveDocumentParams(TypedDict):
    uri: str
    unsavedChanges: NotRequired[bool]
    """The document also held the user's unsaved edits, which this save writes too."""


class SaveDocumentResult(TypedDict):
    saved: bool
    reason: NotRequired[str]


class CommandsChangedParams(TypedDict):
    workspace: str


class McpServerParams(WorkspaceParams):
    name: str
    action: McpAction


class McpServerResult(TypedDict):
    servers: list[McpServerState]


class ChangesParams(SessionParams):
    runId: NotRequired[str]


class ChangedFile(TypedDict):
    path: str
    """Workspace-relative; an ignored folder ends in ``/``."""
    status: Literal["added", "modified", "deleted"]
    byTool: list[str]
    restorable: bool
    before: NotRequired[str]
    after: NotRequired[str]
    reason: NotRequired[str]
    revertedBy: NotRequired[str]
    """(additive, a run's list) the revert that put this file back, when one did."""
    kept: NotRequired[bool]
    """(additive, a run's list) ``true``: the user kept this change (``crank/keep``)."""
    linesAdded: NotRequired[int]
    """(additive) lines the change added; absent when not counted (binary, too large)."""
    linesRemoved: NotRequired[int]
    """(additive) lines the change removed; absent exactly when ``linesAdded`` is."""


class RunChangesJson(TypedDict):
    runId: str
    files: list[ChangedFile]


class ChangesResult(TypedDict):
    files: list[ChangedFile]
    runs: NotRequired[list[RunChangesJson]]
    """(additive) without ``runId``: each run's own list, oldest first (reverts left out)."""


class RevertParams(SessionParams):
    runId: str | list[str]
    paths: NotRequired[list[str]]
    force: NotRequired[bool]


class RevertConflict(TypedDict):
    path: str
    reason: str


class RevertResult(TypedDict):
    reverted: list[str]
    conflicts: list[RevertConflict]
    revertId: NotRequired[str]


class KeepParams(SessionParams):
    runId: str
    paths: NotRequired[list[str]]


class KeepResult(TypedDict):
    kept: list[str]
    conflicts: list[RevertConflict]
    """The paths not kept, each with why (not changed by the run, put back by a revert)."""


class FileContentParams(SessionParams):
    sha256: str


class FileContentResult(TypedDict):
    sha256: str
    text: str


class DiagnosticsParams(TypedDict):
    uris: list[str]


class LspDiagnostic(TypedDict):
    """An LSP ``Diagnostic`` as the editor reports it (the fields Crank reads)."""

    range: Range
    severity: NotRequired[int]
    message: str
    source: NotRequired[str]
    code: NotRequired[str | int]


class FileDiagnostics(TypedDict):
    uri: str
    diagnostics: list[LspDiagnostic]


class DiagnosticsResult(TypedDict):
    items: list[FileDiagnostics]


REQUESTS: dict[str, tuple[type, type]] = {
    "crank/prompt": (PromptParams, PromptResult),
    "crank/commands": (WorkspaceParams, CommandsResult),
    "crank/steer": (QueueParams, QueueResult),
    "crank/followUp": (QueueParams, QueueResult),
    "crank/clearQueue": (SessionParams, QueueState),
    "crank/removeQueued": (RemoveQueuedParams, RemoveQueuedResult),
    "crank/abort": (SessionParams, AbortResult),
    "crank/state": (SessionParams, StateResult),
    "crank/messages": (MessagesParams, MessagesResult),
    "crank/image": (ImageParams, ImageResult),
    "crank/sessions": (WorkspaceParams, SessionsResult),
    "crank/newSession": (WorkspaceParams, SessionResult),
    "crank/openSession": (OpenSessionParams, SessionResult),
    "crank/tree": (SessionParams, TreeResult),
    "crank/branch": (BranchParams, BranchResult),
    "crank/compact": (CompactParams, CompactResult),
    "crank/models": (WorkspaceParams, ModelsResult),
    "crank/setModel": (SetModelParams, SetModelResult),
    "crank/systemPrompt": (WorkspaceParams, SystemPromptResult),
    "crank/setPermissionMode": (SetPermissionModeParams, SetPermissionModeResult),
    "crank/changes": (ChangesParams, ChangesResult),
    "crank/revert": (RevertParams, RevertResult),
    "crank/keep": (KeepParams, KeepResult),
    "crank/fileContent": (FileContentParams, FileContentResult),
    "crank/mcpServer": (McpServerParams, McpServerResult),
}
"""Every request a client sends: method to (params, result)."""

SERVER_REQUESTS: dict[str, tuple[type, type]] = {
    "crank/requestPermission": (PermissionRequest, PermissionResponse),
    "crank/saveDocument": (SaveDocumentParams, SaveDocumentResult),
    "crank/diagnostics": (DiagnosticsParams, DiagnosticsResult),
}
"""Every request the server sends the client: method to (params, result)."""

NOTIFICATIONS: dict[str, type] = {
    "crank/event": EventParams,
    "crank/commandsChanged": CommandsChangedParams,
}
"""Every notification the server sends: method to params."""

EVENT_UNION: Any = WireEvent
"""Every event (``crank/event``'s ``event``), discriminated by ``type``."""

PROMPT_IMAGE: Any = ImageBlock
"""An image on a message (``images``): listed so the schema names it."""

TOOL_DETAILS: tuple[type, ...] = (FileChangeDetails, ReadDetails, CommandDetails, DeclinedDetails)
"""Every tool's ``details`` type (``ToolInfo.details`` names one), so the schema has them."""
