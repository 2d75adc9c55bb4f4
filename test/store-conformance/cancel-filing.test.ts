// Cancels filed in the approval inbox (docs/decisions/0026), on both
// stores: refused at once, nothing written, for an unknown or ended
// execution; filed for an active or suspended one, several at once (each
// under its own approval id), and claimed by the owner with kind `cancel`.

import { describe, expect, it } from "vitest";
import { ExecutionEndedError, ExecutionNotFoundError } from "../../host/errors.js";
import { cancelApprovalId } from "../../host/store/cancel-filing.js";
import type { ClaimedDecision, DecisionFiling, FiledDecision } from "../../host/store/postgres/inbox.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { openTemporaryStore, prepare, providerBarrier, suspendForApproval, terminalCommit } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl } from "../postgres/database.js";

interface InboxOwner extends ExecutionStore {
  fileDecision(filing: Omit<DecisionFiling, "filedBy">): Promise<FiledDecision>;
  claimDecisions(agentId: string): Promise<ClaimedDecision[]>;
}

const cancel = (executionId: string, decisionId: string): Omit<DecisionFiling, "filedBy"> => ({
  kind: "cancel",
  decisionId,
  executionId,
  agentId: "support",
  approvalId: cancelApprovalId(decisionId),
  approved: false,
  reason: "stop",
  filedAt: 70,
});

const backends: { name: string; open: () => Promise<InboxOwner> }[] = [
  { name: "SQLite", open: async () => openTemporaryStore() as unknown as Promise<InboxOwner> },
  {
    name: "PostgreSQL",
    open: async () => {
      const store = await PostgresStore.open(`${postgresUrl}?schema=${freshSchema()}`, { leaseMs: 600_000 });
      atEnd(() => store.close());
      await store.ensureAgent("support", 1);
      await store.acquireLease("support");
      return store as unknown as InboxOwner;
    },
  },
];

for (const backend of backends) {
  describe(`cancels in the inbox (${backend.name})`, () => {
    it("files cancels of active and suspended executions, two for one execution, claimed with kind cancel; refuses unknown and ended ones", async () => {
      const store = await backend.open();
      await store.ensureAgent("support", 1);
      await store.run(prepare("active"));
      await store.run(prepare("suspended"));
      await store.run(providerBarrier("suspended", 1));
      await store.run(suspendForApproval("suspended", 2));
      await store.run(prepare("ended"));
      await store.run(
        terminalCommit("ended", 1, { outcome: "failed", output: null, error: { code: "CANCELLED", message: "cancelled" }, steps: [], journal: [] }),
      );

      expect(await store.fileDecision(cancel("active", "d1"))).toEqual({ decisionId: "d1", executionRevision: 1 });
      expect(await store.fileDecision(cancel("active", "d2"))).toEqual({ decisionId: "d2", executionRevision: 1 });
      expect(await store.fileDecision(cancel("suspended", "d3"))).toEqual({ decisionId: "d3", executionRevision: 3 });
      await expect(store.fileDecision(cancel("missing", "d4"))).rejects.toBeInstanceOf(ExecutionNotFoundError);
      const ended = await store.fileDecision(cancel("ended", "d5")).catch((error: unknown) => error);
      expect(ended).toBeInstanceOf(ExecutionEndedError);
      expect(ended).toMatchObject({ details: { outcome: "cancelled" } });

      const claims = await store.claimDecisions("support");
      expect(claims.map(({ decisionId, kind, executionId, reason }) => ({ decisionId, kind, executionId, reason }))).toEqual([
        { decisionId: "d1", kind: "cancel", executionId: "active", reason: "stop" },
        { decisionId: "d2", kind: "cancel", executionId: "active", reason: "stop" },
        { decisionId: "d3", kind: "cancel", executionId: "suspended", reason: "stop" },
      ]);
    });
  });
}
