import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { EventParams, PermissionRequest } from "../../src/protocol/types";

export type Step = { notify: "crank/event"; params: EventParams } | { request: "crank/requestPermission"; params: PermissionRequest };
export interface RunFixture { workspace: string; sessionId: string; untilPermission: Step[]; afterAllow: Step[]; afterStop: Step[] }

/** The recorded run in test/fixtures/run.json (tests run from the vscode-client folder). */
export function loadRun(): RunFixture {
  return JSON.parse(readFileSync(path.join(process.cwd(), "test", "fixtures", "run.json"), "utf8")) as RunFixture;
}
export function eventsOf(steps: Step[]): EventParams[] {
  return steps.flatMap((s) => ("notify" in s ? [s.params] : []));
}
