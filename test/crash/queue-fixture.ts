// Shared by the queue crash child (`queue-child.ts`) and its test
// (`queue.test.ts`): the child's configuration, its output lines, and the
// messages it sends.

import type { CrashFiles } from "./fixture.js";

export interface QueueChildConfig {
  readonly store: string;
  readonly files: CrashFiles;
  readonly messages: number;
  /** `point:#n`: die at the n-th kill point; none: run to the end. */
  readonly kill?: string;
  readonly trace?: boolean;
}

export type QueueChildLine =
  | { readonly type: "accepted"; readonly executionId: string; readonly input: string }
  | { readonly type: "settled"; readonly executionId: string; readonly output: unknown }
  | { readonly type: "point"; readonly point: string; readonly index: number }
  | { readonly type: "killing"; readonly point: string; readonly index: number }
  | { readonly type: "done"; readonly points: number };

export const QUEUE_AGENT_ID = "support";

export function messageInput(index: number): string {
  return `Where are orders 42 and 43? (message ${index})`;
}
