// The link a child execution stores to its parent (docs/decisions/0079):
// the parent's execution and conversation, the call that started the child
// and the parent's wait it ends. Kept apart from child-waits.ts so the
// start options can check it without importing the runtime's waits.

import { InvalidInputError } from "../errors.js";

/** What a child stores of its parent (`config.parent`): enough for its
 * terminal commit to file its end for the parent's wait. */
export interface ParentLink {
  readonly executionId: string;
  readonly agentId: string;
  readonly callId: string;
  /** The parent's wait (its approval request's id). */
  readonly waitId: string;
}

/** The parent link a child's start carries, checked (it is stored). */
export function parentLinkOf(value: unknown, what: string): ParentLink {
  const link = value as Partial<Record<keyof ParentLink, unknown>> | null;
  const keys: (keyof ParentLink)[] = ["executionId", "agentId", "callId", "waitId"];
  if (typeof link !== "object" || link === null || keys.some((key) => typeof link[key] !== "string" || (link[key] as string).length === 0)) {
    throw new InvalidInputError(`${what}: "childOf" must be { executionId, agentId, callId, waitId }, all non-empty strings`);
  }
  return { executionId: link.executionId as string, agentId: link.agentId as string, callId: link.callId as string, waitId: link.waitId as string };
}
