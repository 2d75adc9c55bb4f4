// What the coordinator asks the conversation queues (`conversation-queue.ts`
// implements it): the effects of the core that concern a conversation's
// queue, and the ends of the starts the queue took from it. Declared apart
// from the coordinator so that neither file grows past its limit and the
// queue's files need not name the coordinator to say what they offer.

import type { PhronomyError } from "../errors.js";
import type { AgentEntry, StartRequest } from "./requests.js";

export interface BusyHooks {
  /** A start ended by its preparation with `error`: true when it was a
   * queue head the core kept queued (`HeadKept`) or let follow the
   * execution another process prepared (`HeadTaken`): its Run is not told. */
  readonly headFailed: (request: StartRequest, error: PhronomyError) => boolean;
  /** A start was installed or refused: a queue head left its queue. */
  readonly headLeft: (request: StartRequest) => false;
  /** Effect HeadKept: the head whose start just settled is the head again. */
  readonly headKept: (agent: AgentEntry) => void;
  /** Effect HeadTaken: the head's Run follows the execution another
   * process prepared under its id. */
  readonly headTaken: (agent: AgentEntry) => void;
  /** Effect FollowQueued: the conversation is owned elsewhere; the callers
   * of its messages queued here follow them there. */
  readonly followQueued: (agent: AgentEntry | undefined) => void;
  /** The core's `ReadinessChanged`: the conversation in `slot` left
   * registering or recovering, or its agent closed: starts waiting on it
   * ask again. */
  readonly conversationChanged: (slot: number) => void;
  /** `OpenAdmissions`: the conversation is ready after a recovery. */
  readonly admissionsOpened: (agent: AgentEntry) => void;
  /** The core's `StartHead`: the conversation's queue head is offered to
   * the core again (posted to the loop). */
  readonly startHead: (agent: AgentEntry) => void;
  /** The core's `RetryHeadAfter`: `HeadRetryDue` after `delayMs`. */
  readonly retryHeadAfter: (agent: AgentEntry, delayMs: number) => void;
}
