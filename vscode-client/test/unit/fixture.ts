import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { AbortResult, ChangesResult, EventParams, MessagesResult, PermissionRequest, QueueState, StateResult } from "../../src/protocol/types";

export type Step = { notify: "crank/event"; params: EventParams } | { request: "crank/requestPermission"; params: PermissionRequest };
/** What the server answered after the run: the clearQueue and abort that stopped it, then the reads. */
export interface RunAnswers { clearQueue: QueueState; abort: AbortResult; messages: MessagesResult; changes: ChangesResult; state: StateResult }
export interface RunFixture { workspace: string; sessionId: string; untilPermission: Step[]; afterAllow: Step[]; afterStop: Step[]; answers: RunAnswers }

/** The run recorded from the real server (tests/support/record_run.py) in
 * test/fixtures/run.json (tests run from the vscode-client folder). */
export function loadRun(): RunFixture {
  return JSON.parse(readFileSync(path.join(process.cwd(), "test", "fixtures", "run.json"), "utf8")) as RunFixture;
}
export function eventsOf(steps: Step[]): EventParams[] {
  return steps.flatMap((s) => ("notify" in s ? [s.params] : []));
}
