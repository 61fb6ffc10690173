-- The Crank wire contract (protocol version 1) as LuaCATS annotations.
--
-- GENERATED from docs/protocol.schema.json by `python -m crank.workspace.schema`
-- (server/crank/workspace/contract.py is the source): do not edit; `./dev test` fails
-- when this file is stale. Types are named crank.<Name>, as in the schema's $defs.

---@class crank.AbortResult
---@field stopReason "aborted"|"idle"

---@class crank.AgentEnd
---@field type "agent_end"
---@field stopReason crank.StopReason

--- The last event of every run, exactly once.
---@class crank.AgentSettled
---@field type "agent_settled"

---@class crank.AgentStart
---@field type "agent_start"

---@class crank.AssistantMessage
---@field role "assistant"
---@field content crank.ContentBlock[]
---@field stopReason crank.StopReason
---@field usage crank.Usage
---@field model string
---@field timestamp integer
---@field errorMessage? string
---@field api? string
---@field errorKind? crank.ErrorKind

---@alias crank.AttachedImage crank.InlineImage|crank.PathImage

---@class crank.BranchParams
---@field workspace? string
---@field sessionId? string
---@field entryId string
---@field summarize? boolean

---@class crank.BranchResult
---@field tip string|nil

---@class crank.ChangedFile
---@field path string Workspace-relative; an ignored folder ends in ``/``.
---@field status "added"|"modified"|"deleted"
---@field byTool string[]
---@field restorable boolean
---@field before? string
---@field after? string
---@field reason? string
---@field revertedBy? string (additive, a run's list) the revert that put this file back, when one did.
---@field kept? boolean (additive, a run's list) ``true``: the user kept this change (``crank/keep``).
---@field linesAdded? integer (additive) lines the change added; absent when not counted (binary, too large).
---@field linesRemoved? integer (additive) lines the change removed; absent exactly when ``linesAdded`` is.

---@class crank.ChangesParams
---@field workspace? string
---@field sessionId? string
---@field runId? string

---@class crank.ChangesResult
---@field files crank.ChangedFile[]
---@field runs? crank.RunChangesJson[] (additive) without ``runId``: each run's own list, oldest first (reverts left out).

--- ``bash``: how the command ended, and where its whole output was saved.
---@class crank.CommandDetails
---@field exitCode integer|nil
---@field timedOut boolean
---@field fullOutputPath string|nil

--- One entry of ``crank/commands``: typed as ``/name args``; ``name`` has no slash.
---@class crank.CommandInfo
---@field name string
---@field description string
---@field kind crank.CommandKind
---@field argumentHint? string

---@alias crank.CommandKind "builtin"|"skill"|"template"|"mcp"

---@class crank.CommandPreview
---@field kind "command"
---@field command string

---@class crank.CommandsChangedParams
---@field workspace string

---@class crank.CommandsResult
---@field commands crank.CommandInfo[]

---@class crank.CompactParams
---@field workspace? string
---@field sessionId? string
---@field instructions? string

---@class crank.CompactResult
---@field compacted boolean
---@field tokensBefore? integer
---@field tokensAfter? integer
---@field reason? string

---@class crank.CompactionEnd
---@field type "compaction_end"
---@field compacted boolean
---@field error? string

---@alias crank.CompactionReason "threshold"|"overflow"|"manual"

---@class crank.CompactionStart
---@field type "compaction_start"
---@field reason crank.CompactionReason

---@alias crank.ContentBlock crank.TextBlock|crank.ThinkingBlock|crank.ToolCallBlock

--- A file (or a range of one) the prompt points at; with ``diagnostics`` (the editor's for that file, ``@problems``), its problems instead of its text.
---@class crank.ContextItem
---@field uri string
---@field range? crank.Range
---@field diagnostics? crank.LspDiagnostic[]

--- The context meter and the session's spend: what ``crank/state`` reports as ``usage`` and what a ``usage_update`` event carries. Defined once here, the lowest layer that uses it.
---@class crank.ContextUsage
---@field contextTokens integer
---@field contextWindow integer
---@field input integer
---@field output integer
---@field cacheRead integer
---@field cacheWrite integer
---@field cost number

---@alias crank.CrankEvent crank.AgentStart|crank.TurnStart|crank.MessageStart|crank.MessageUpdate|crank.MessageEnd|crank.ToolExecutionStart|crank.ToolExecutionUpdate|crank.ToolExecutionEnd|crank.TurnEnd|crank.AgentEnd|crank.AgentSettled|crank.QueueUpdate|crank.CompactionStart|crank.CompactionEnd|crank.RetryStart|crank.RetryEnd|crank.UsageUpdate|crank.ImagesOmitted|crank.Notice|crank.SystemPromptChanged|crank.SessionChanged|crank.McpChanged

---@class crank.CurrentModel
---@field api string
---@field id string
---@field contextWindow? integer
---@field baseUrl? string The endpoint the model is asked at, credentials taken out (additive): absent while no provider is configured and for the scripted model. What a client checks is listening (Neovim's ``:checkhealth crank``), whichever layer set it.

--- Any changing tool whose call the user declined.
---@class crank.DeclinedDetails
---@field declined boolean
---@field reason string|nil

--- New text of one block. Concatenating the deltas of a ``contentIndex`` gives the block's text in its ``message_end``; a tool call's first delta names the call.
---@class crank.Delta
---@field kind crank.DeltaKind
---@field contentIndex integer
---@field text string
---@field toolCallId? string
---@field toolName? string

---@alias crank.DeltaKind "text"|"thinking"|"toolCall"

---@class crank.DiagnosticsParams
---@field uris string[]

---@class crank.DiagnosticsResult
---@field items crank.FileDiagnostics[]

---@class crank.DiffPreview
---@field kind "diff"
---@field path string
---@field oldText string
---@field newText string
---@field unsavedChanges? boolean The file is open with text the disk does not hold (the user's unsaved edits): the change is saved together with them, so the question says so.
---@field oldTextOmitted? integer Set (to the old file's size in bytes) when the old file was too large or not text, so it was not loaded: ``oldText`` is then empty and is NOT the old content (a client must not offer to restore it).
---@field created? boolean True when the file does not exist yet: ``oldText`` is empty because there is no old file (ACP's diff then says ``oldText: null``).

---@alias crank.ErrorKind "rate_limit"|"overloaded"|"server"|"auth"|"invalid_request"|"overflow"|"network"|"timeout"

--- ``crank/event`` params: the event and where it belongs.
---@class crank.EventParams
---@field workspace string
---@field sessionId string
---@field runId? string
---@field seq integer
---@field event crank.CrankEvent

--- ``edit`` and ``write``: the whole file before and after, and the diff shown.
---@class crank.FileChangeDetails
---@field path string
---@field oldText string
---@field newText string
---@field diff string
---@field oldTextOmitted? integer The old file's size in bytes when it was too large or not text to load: ``oldText`` is then empty and is NOT the old content.

---@class crank.FileContentParams
---@field workspace? string
---@field sessionId? string
---@field sha256 string

---@class crank.FileContentResult
---@field sha256 string
---@field text string

---@class crank.FileDiagnostics
---@field uri string
---@field diagnostics crank.LspDiagnostic[]

--- An image on a user message or a tool result (``images``). Exactly one of ``data`` (the bytes, base64, inline) and ``sha256`` (a blob stored beside the session file, docs/session.md) says where its bytes are; a request is always built with them inline (or with a placeholder when they cannot be had).
---@class crank.ImageBlock
---@field type "image"
---@field mimeType string ``image/png`` | ``image/jpeg`` | ``image/gif`` | ``image/webp`` (agent.images).
---@field bytes integer The size of the image itself (decoded), for placeholders and the transcript.
---@field name? string A file name to show (``screenshot.png``); never a path the model can use.
---@field width? integer
---@field height? integer
---@field data? string
---@field sha256? string

---@class crank.ImageParams
---@field workspace? string
---@field sessionId? string
---@field sha256 string

---@class crank.ImageResult
---@field mimeType string
---@field data string
---@field bytes integer

--- Said once per session and model: a request left images out (placeholders stand in for them), because the model takes none or a stored copy is missing.
---@class crank.ImagesOmitted
---@field type "images_omitted"
---@field count integer
---@field message string

--- An image attached by value: base64 ``data``.
---@class crank.InlineImage
---@field mimeType string
---@field data string
---@field name? string

---@class crank.KeepParams
---@field workspace? string
---@field sessionId? string
---@field runId string
---@field paths? string[]

---@class crank.KeepResult
---@field kept string[]
---@field conflicts crank.RevertConflict[] The paths not kept, each with why (not changed by the run, put back by a revert).

--- An LSP ``Diagnostic`` as the editor reports it (the fields Crank reads).
---@class crank.LspDiagnostic
---@field range crank.Range
---@field severity? integer
---@field message string
---@field source? string
---@field code? string|integer

--- A server started, failed, stopped or changed its tools (``crank/state`` ``mcp``).
---@class crank.McpChanged
---@field type "mcp_changed"
---@field servers crank.McpServerState[]

---@class crank.McpServerParams
---@field workspace? string
---@field name string
---@field action "restart"|"disable"|"enable"

---@class crank.McpServerResult
---@field servers crank.McpServerState[]

--- One server as ``crank/state`` ``mcp`` and the ``mcp_changed`` event list it.
---@class crank.McpServerState
---@field name string
---@field source "user"|"editor"|"workspace"|"acp"
---@field transport "stdio"|"http"|"sse"
---@field state "idle"|"starting"|"ready"|"failed"|"disabled"
---@field tools string[] The names the model sees (``mcp__<server>__<tool>``).
---@field error? string
---@field pid? integer
---@field problems? string[]

---@alias crank.Message crank.UserMessage|crank.AssistantMessage|crank.ToolResultMessage

---@class crank.MessageEnd
---@field type "message_end"
---@field message crank.Message
---@field entryId? string The message's id in the session file, set by the log's listener.

---@class crank.MessageStart
---@field type "message_start"
---@field message crank.Message

---@class crank.MessageUpdate
---@field type "message_update"
---@field delta crank.Delta

--- Either of ``limit`` and ``before`` asks for one page of the transcript: at most ``limit`` messages (at least 1; default all) ending before position ``before`` (0-based; default the end, a larger one is taken as the end). A page never begins with a tool result: it starts earlier, at the message holding the call, so it can be a few results longer than ``limit``.
---@class crank.MessagesParams
---@field workspace? string
---@field sessionId? string
---@field limit? integer
---@field before? integer

---@class crank.MessagesResult
---@field messages crank.Message[]
---@field start? integer Only for a page: the position of its first message in the whole transcript (0: nothing earlier to ask for).
---@field total? integer Only for a page: how many messages the whole transcript holds.

--- One entry of ``crank/models``: who lists it, and the window Crank uses for it.
---@class crank.ModelInfo
---@field api string
---@field id string
---@field contextWindow integer
---@field source "server"|"catalog"|"config"

---@class crank.ModelRef
---@field api string
---@field id string

---@class crank.ModelsResult
---@field models crank.ModelInfo[]

--- One line for the chat, said once: the server cannot call tools, the window was learned from a refusal, the one served model was chosen, folder settings were ignored, a "Fix This File" run left its file unchanged. ``kind`` says which; ``message`` is the text to show.
---@class crank.Notice
---@field type "notice"
---@field kind "tools_unsupported"|"window_learned"|"model_discovered"|"settings_ignored"|"fix_not_applied"
---@field message string

---@class crank.OpenSessionParams
---@field workspace? string
---@field sessionId string

--- An image attached by a path the server reads (inside the workspace).
---@class crank.PathImage
---@field path string
---@field name? string

---@class crank.PathPreview
---@field kind "path"
---@field path string

---@alias crank.PermissionDecision "allow"|"allowSession"|"allowAlways"|"reject"

---@alias crank.PermissionMode "ask"|"autoEdit"|"auto"|"readOnly"

--- ``crank/requestPermission`` params: one tool call the user is asked about.
---@class crank.PermissionRequest
---@field workspace string
---@field sessionId string
---@field runId string
---@field toolCallId string
---@field toolName string The tool, or the pseudo tool ``outside`` for a path outside the workspace.
---@field arguments table<string, any>
---@field preview? crank.Preview
---@field warning? string What to know before answering, for a person: the command would run unconfined, a remembered rule names the program but does not cover this command, or both.
---@field unconfined? boolean True when the command would run unconfined (the sandbox is wanted but missing); ``warning`` then says so. A client that decides by itself reads this, not ``warning``.

--- ``crank/requestPermission`` result.
---@class crank.PermissionResponse
---@field decision crank.PermissionDecision
---@field reason? string

---@class crank.Position
---@field line integer
---@field character integer

---@alias crank.Preview crank.DiffPreview|crank.CommandPreview|crank.PathPreview

---@class crank.PromptParams
---@field workspace? string
---@field sessionId? string
---@field text string
---@field context? crank.ContextItem[]
---@field images? crank.AttachedImage[]
---@field whileRunning? crank.WhileRunning

--- A run started (``runId``), a message queued (``queued``), or a built-in command performed (``command`` and ``result``, what that command's own request answers).
---@class crank.PromptResult
---@field sessionId string
---@field runId? string
---@field queued? "steer"|"followUp"
---@field command? string
---@field result? any
---@field imagesOmitted? string A sentence: the model takes no images, so the prompt's were left out.

---@alias crank.QueueKind "steering"|"followUp"

--- ``crank/steer`` and ``crank/followUp``.
---@class crank.QueueParams
---@field workspace? string
---@field sessionId? string
---@field text string
---@field images? crank.AttachedImage[]

--- The queues after ``crank/steer`` or ``crank/followUp``.
---@class crank.QueueResult
---@field steering string[]
---@field followUp string[]
---@field imagesOmitted? string

--- Both queues as the wire shows them (``queue_update``, ``crank/state`` queue).
---@class crank.QueueState
---@field steering string[]
---@field followUp string[]

---@class crank.QueueUpdate
---@field steering string[]
---@field followUp string[]
---@field type "queue_update"

--- An LSP range (UTF-16 positions).
---@class crank.Range
---@field start crank.Position
---@field end crank.Position

--- ``read``: which file, and whether the text came from an open editor buffer.
---@class crank.ReadDetails
---@field path string
---@field openInEditor boolean
---@field unsaved boolean The buffer holds text the disk does not (the user's unsaved edits).

---@class crank.RemoveQueuedParams
---@field workspace? string
---@field sessionId? string
---@field queue crank.QueueKind
---@field index integer
---@field text? string

---@class crank.RemoveQueuedResult
---@field steering string[]
---@field followUp string[]
---@field removed string|nil The text taken out, or null when it was already gone (taken by the run).

---@alias crank.ResultShown "first_line"|"last_lines"|"line_count"|"joined"

---@class crank.RetryEnd
---@field type "retry_end"
---@field attempt integer
---@field success boolean

--- The vendor is about to wait ``delayMs`` and try again (nothing streamed yet).
---@class crank.RetryStart
---@field type "retry_start"
---@field attempt integer
---@field delayMs integer
---@field error string

---@class crank.RevertConflict
---@field path string
---@field reason string

---@class crank.RevertParams
---@field workspace? string
---@field sessionId? string
---@field runId string|string[]
---@field paths? string[]
---@field force? boolean

---@class crank.RevertResult
---@field reverted string[]
---@field conflicts crank.RevertConflict[]
---@field revertId? string

---@class crank.RunChangesJson
---@field runId string
---@field files crank.ChangedFile[]

---@alias crank.SandboxMode "read-only"|"workspace-write"|"off"

--- How the agent's commands are confined (docs/protocol.md "Sandbox").
---@class crank.SandboxState
---@field mode crank.SandboxMode
---@field network boolean
---@field available boolean
---@field confined boolean
---@field detail string

---@class crank.SaveDocumentParams
---@field uri string
---@field unsavedChanges? boolean The document also held the user's unsaved edits, which this save writes too.

---@class crank.SaveDocumentResult
---@field saved boolean
---@field reason? string

--- The workspace's active session is another one now (new, opened).
---@class crank.SessionChanged
---@field type "session_changed"
---@field sessionId string

---@alias crank.SessionEnd "error"|"aborted"

--- One line of the session list (``crank/sessions``, ``crank sessions list``): what a picker shows, read without parsing the whole file. Not a summary of the content.
---@class crank.SessionInfo
---@field sessionId string
---@field title string
---@field created string
---@field modified string
---@field messageCount integer
---@field firstMessage string
---@field torn? boolean The last line is incomplete; ``crank sessions repair`` the file before writing.
---@field error? string The file cannot be listed (bad header); it is shown, never silently left out.
---@field ended? crank.SessionEnd

--- A request about the active session may name it; another id is refused (1002).
---@class crank.SessionParams
---@field workspace? string
---@field sessionId? string

--- ``crank/newSession`` and ``crank/openSession``.
---@class crank.SessionResult
---@field sessionId string

---@class crank.SessionsResult
---@field sessions crank.SessionInfo[]

---@class crank.SetModelParams
---@field workspace? string
---@field sessionId? string
---@field api string
---@field id string

---@class crank.SetModelResult
---@field model crank.ModelRef

---@class crank.SetPermissionModeParams
---@field workspace? string
---@field mode crank.PermissionMode

---@class crank.SetPermissionModeResult
---@field mode crank.PermissionMode

--- One entry of the source map, as ``crank/systemPrompt`` returns it.
---@class crank.Source
---@field kind crank.SourceKind
---@field path? string
---@field name? string
---@field reason? string

---@alias crank.SourceKind "tool"|"contextFile"|"skill"|"setting"|"skipped"

---@class crank.StateResult
---@field sessionId string
---@field running boolean
---@field runId? string Only while a run is active.
---@field model crank.CurrentModel
---@field permissionMode crank.PermissionMode
---@field trusted boolean
---@field sandbox crank.SandboxState
---@field queue crank.QueueState
---@field usage crank.ContextUsage
---@field sessionFile string
---@field seq integer The last seq the server sent for the session (from 0 again in a new process).
---@field configError? string Only while no provider is configured: what to set.
---@field viewRepairs? crank.ViewRepairs
---@field branched? boolean Whether the session has more than one branch (an entry went back: ``crank/branch``), so a client need not read ``crank/tree`` to list one. Absent when only reading the history an open left unread would tell (a compaction written before ``forkedBefore``), and from a server before it.
---@field tools? crank.ToolInfoJson[] The tools the next run offers, each as it describes itself.
---@field mcp? crank.McpServerState[] Only when an MCP server is configured (docs/mcp.md).

---@alias crank.StopReason "stop"|"toolUse"|"length"|"error"|"aborted"

--- The prompt for the next run was rebuilt (its bytes changed).
---@class crank.SystemPromptChanged
---@field type "system_prompt_changed"
---@field hash string
---@field sources table<string, any>[]

---@class crank.SystemPromptResult
---@field text string
---@field hash string
---@field sources crank.Source[]

---@class crank.TextBlock
---@field type "text"
---@field text string

---@class crank.ThinkingBlock
---@field type "thinking"
---@field thinking string
---@field signature? string Opaque provider token; Anthropic needs it sent back unchanged.
---@field redacted? string Reasoning the provider encrypted (Anthropic ``redacted_thinking``): opaque data, never shown, sent back unchanged; ``thinking`` is then empty.

---@class crank.ToolCallBlock
---@field type "toolCall"
---@field id string
---@field name string
---@field arguments table<string, any>

---@class crank.ToolExecutionEnd
---@field type "tool_execution_end"
---@field toolCallId string
---@field result crank.ToolOutcome

---@class crank.ToolExecutionStart
---@field type "tool_execution_start"
---@field toolCallId string
---@field toolName string
---@field arguments table<string, any>

---@class crank.ToolExecutionUpdate
---@field type "tool_execution_update"
---@field toolCallId string
---@field output string Only what is new since the last update.

--- What a tool says about itself (``crank.agent.tools.ToolInfo``), so a client never matches tool names: its kind (ACP's vocabulary), a label, which argument says what a call does, how its result is summed up, whether it changes files through the edit path, and the name of its ``details`` type in this schema.
---@class crank.ToolInfoJson
---@field name string
---@field kind crank.ToolKind
---@field label string
---@field shows? string
---@field result crank.ResultShown
---@field editsFiles boolean
---@field details? string

---@alias crank.ToolKind "read"|"edit"|"delete"|"move"|"search"|"execute"|"think"|"fetch"|"other"

---@class crank.ToolOutcome
---@field content string
---@field isError boolean
---@field details? table<string, any> For clients (a diff, a saved-output path); never sent to the model.

---@class crank.ToolResultMessage
---@field role "toolResult"
---@field toolCallId string
---@field toolName string
---@field content string
---@field isError boolean
---@field timestamp integer
---@field images? crank.ImageBlock[] Images the tool returned (``read`` of an image file), after the text.

--- One entry of the session file's tree, in file order.
---@class crank.TreeEntry
---@field id string
---@field parentId string|nil
---@field type string
---@field role? string
---@field preview? string
---@field label? string

---@class crank.TreeResult
---@field tip string|nil
---@field entries crank.TreeEntry[]

---@class crank.TurnEnd
---@field type "turn_end"
---@field message crank.AssistantMessage

---@class crank.TurnStart
---@field type "turn_start"
---@field turn integer 1-based within the run.

---@class crank.Usage
---@field input integer
---@field output integer
---@field cacheRead integer
---@field cacheWrite integer
---@field cost? number US dollars for this one reply, when the model's prices are known.

---@class crank.UsageUpdate
---@field contextTokens integer
---@field contextWindow integer
---@field input integer
---@field output integer
---@field cacheRead integer
---@field cacheWrite integer
---@field cost number
---@field type "usage_update"

---@class crank.UserMessage
---@field role "user"
---@field content string
---@field timestamp integer
---@field images? crank.ImageBlock[] Images sent with the text, after it, in order.
---@field typed? string What the user typed when ``content`` is its expansion (a ``/command``): clients show this, the model is sent ``content``.

--- What the view repaired on the way from the record to the model's request.
---@class crank.ViewRepairs
---@field interruptedResults integer
---@field droppedOrphanResults integer
---@field droppedDuplicateResults integer
---@field droppedEmptyReplies integer

---@alias crank.WhileRunning "steer"|"followUp"|"reject"

--- Every ``crank/*`` request may name its workspace folder (its URI); it may be left out when only one folder is open.
---@class crank.WorkspaceParams
---@field workspace? string

--- Every request a client sends: its params and its result.
---@class crank.Requests
---@field ["crank/prompt"] { params: crank.PromptParams, result: crank.PromptResult }
---@field ["crank/commands"] { params: crank.WorkspaceParams, result: crank.CommandsResult }
---@field ["crank/steer"] { params: crank.QueueParams, result: crank.QueueResult }
---@field ["crank/followUp"] { params: crank.QueueParams, result: crank.QueueResult }
---@field ["crank/clearQueue"] { params: crank.SessionParams, result: crank.QueueState }
---@field ["crank/removeQueued"] { params: crank.RemoveQueuedParams, result: crank.RemoveQueuedResult }
---@field ["crank/abort"] { params: crank.SessionParams, result: crank.AbortResult }
---@field ["crank/state"] { params: crank.SessionParams, result: crank.StateResult }
---@field ["crank/messages"] { params: crank.MessagesParams, result: crank.MessagesResult }
---@field ["crank/image"] { params: crank.ImageParams, result: crank.ImageResult }
---@field ["crank/sessions"] { params: crank.WorkspaceParams, result: crank.SessionsResult }
---@field ["crank/newSession"] { params: crank.WorkspaceParams, result: crank.SessionResult }
---@field ["crank/openSession"] { params: crank.OpenSessionParams, result: crank.SessionResult }
---@field ["crank/tree"] { params: crank.SessionParams, result: crank.TreeResult }
---@field ["crank/branch"] { params: crank.BranchParams, result: crank.BranchResult }
---@field ["crank/compact"] { params: crank.CompactParams, result: crank.CompactResult }
---@field ["crank/models"] { params: crank.WorkspaceParams, result: crank.ModelsResult }
---@field ["crank/setModel"] { params: crank.SetModelParams, result: crank.SetModelResult }
---@field ["crank/systemPrompt"] { params: crank.WorkspaceParams, result: crank.SystemPromptResult }
---@field ["crank/setPermissionMode"] { params: crank.SetPermissionModeParams, result: crank.SetPermissionModeResult }
---@field ["crank/changes"] { params: crank.ChangesParams, result: crank.ChangesResult }
---@field ["crank/revert"] { params: crank.RevertParams, result: crank.RevertResult }
---@field ["crank/keep"] { params: crank.KeepParams, result: crank.KeepResult }
---@field ["crank/fileContent"] { params: crank.FileContentParams, result: crank.FileContentResult }
---@field ["crank/mcpServer"] { params: crank.McpServerParams, result: crank.McpServerResult }

--- Every request the server sends the client: its params and the answer it expects.
---@class crank.ServerRequests
---@field ["crank/requestPermission"] { params: crank.PermissionRequest, result: crank.PermissionResponse }
---@field ["crank/saveDocument"] { params: crank.SaveDocumentParams, result: crank.SaveDocumentResult }
---@field ["crank/diagnostics"] { params: crank.DiagnosticsParams, result: crank.DiagnosticsResult }

--- Every notification the server sends: its params.
---@class crank.Notifications
---@field ["crank/event"] { params: crank.EventParams }
---@field ["crank/commandsChanged"] { params: crank.CommandsChangedParams }

--- Every event's `type`, as `crank/event` carries it.
---@alias crank.EventType "agent_start"|"turn_start"|"message_start"|"message_update"|"message_end"|"tool_execution_start"|"tool_execution_update"|"tool_execution_end"|"turn_end"|"agent_end"|"agent_settled"|"queue_update"|"compaction_start"|"compaction_end"|"retry_start"|"retry_end"|"usage_update"|"images_omitted"|"notice"|"system_prompt_changed"|"session_changed"|"mcp_changed"

return { PROTOCOL_VERSION = 1 }
