// Every operation the offload accepts, and what each answers: the records'
// operations (records.ts) with pruning's (prune.ts) and the queue's
// (queue.ts). The union lives above all three, so that records.ts, the
// plain data every store file reads, imports none of the files that use it.

import type { PruneCounts, PruneExecutionsOperation } from "./prune.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult, QueueOperation } from "./queue.js";
import type { AgentLifecycleOperation, AgentRow, PurgeAgentOperation, PurgeAgentResult, StoreOperation, StoreResult } from "./records.js";

/** Everything the offload accepts (pruning: `prune.ts`; queues: `queue.ts`). */
export type OffloadOperation = StoreOperation | AgentLifecycleOperation | PruneExecutionsOperation | QueueOperation;

/** What each operation the offload accepts answers. */
export type OffloadResult<O extends OffloadOperation> = O extends StoreOperation
  ? StoreResult<O>
  : O extends PurgeAgentOperation
    ? PurgeAgentResult
    : O extends PruneExecutionsOperation
      ? PruneCounts
      : O extends EnqueueMessageOperation
        ? EnqueueMessageResult
        : O extends CancelQueuedOperation
          ? CancelQueuedResult
          : AgentRow;
