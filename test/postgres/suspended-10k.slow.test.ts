// 10,000 conversations suspended for approval in one process on PostgreSQL,
// then all approved (issue 13): with a lease per agent this failed after
// 2,200–2,600 starts (every lease renewed by its own UPDATE, renewals fell
// behind, leases expired). With partitions (docs/decisions/0030) one tick
// statement renews them all: every run suspends, every approval completes,
// no partition is lost (every epoch still the first), and no conversation
// wrote a lease. Times are printed, never asserted.

import { describe, expect, it } from "vitest";
import { Phronomy, type Run } from "../../host/index.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { approvalRefundTool, recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

const conversations = 10_000;
/** Starts (then resumes) in flight at once. */
const inFlight = 200;
/** Short leases: renewal must keep up while the process is busiest. */
const leaseMs = 3_000;

const refundModel = () =>
  scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "Refunded." } : { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] },
  );

async function inBatches<T>(count: number, body: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const index = next++;
        results[index] = await body(index);
      }
    }),
  );
  return results;
}

describe("10,000 conversations suspended for approval (PostgreSQL partitions)", () => {
  it("all suspend, all are approved and complete; no partition is lost and no lease is written per conversation", async () => {
    const schema = freshSchema();
    const logger = recordingLogger();
    const env = await Phronomy.open({ store: `${postgresUrl}?schema=${schema}&lease_ms=${leaseMs}`, logger, limits: { executionsMax: 16_384 } });
    atEnd(() => env.close());
    const store = env.store as PostgresStore;
    const refunds: string[] = [];
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) }, memoryWindow: 1 });
    const before = (await withClient((client) => client.query(`SELECT partition, owner, epoch FROM ${schema}.partitions ORDER BY partition`))).rows;

    const suspendStartedAt = Date.now();
    const suspended = await inBatches(
      conversations,
      (index) =>
        new Promise<{ executionId: string; approvalId: string }>((resolve, reject) => {
          const run: Run = support.conversation(`user-${index}`).start("Refund order 42", {
            onEvent: (event) => {
              if (event.type === "approval_required") resolve({ executionId: event.executionId, approvalId: event.request.approvalId });
            },
          });
          run.result.then((result) => reject(new Error(`user-${index} ended ${result.outcome} before approval`)), reject);
        }),
    );
    const suspendMs = Date.now() - suspendStartedAt;
    const rows = (
      await withClient((client) =>
        client.query<{ status: string; count: number }>(`SELECT status, count(*)::int AS count FROM ${schema}.executions GROUP BY status`),
      )
    ).rows;
    expect(rows).toEqual([{ status: "suspended", count: conversations }]);

    const resumeStartedAt = Date.now();
    const outcomes = await inBatches(conversations, async (index) => {
      const { executionId, approvalId } = suspended[index]!;
      return (await support.conversation(`user-${index}`).resume(executionId, { approvalId, approved: true }).result).outcome;
    });
    const resumeMs = Date.now() - resumeStartedAt;
    expect(outcomes.filter((outcome) => outcome !== "completed")).toEqual([]);
    expect(refunds).toHaveLength(conversations);
    const ended = (
      await withClient((client) =>
        client.query<{ status: string; outcome: string; count: number }>(
          `SELECT status, outcome, count(*)::int AS count FROM ${schema}.executions GROUP BY status, outcome`,
        ),
      )
    ).rows;
    expect(ended).toEqual([{ status: "terminal", outcome: "completed", count: conversations }]);

    // No partition changed hands or epoch, none expired; no per-agent lease row.
    const after = (await withClient((client) => client.query(`SELECT partition, owner, epoch FROM ${schema}.partitions ORDER BY partition`))).rows;
    expect(after).toEqual(before);
    expect(new Set(after.map((row) => row.owner))).toEqual(new Set([store.leaseOwner]));
    expect((await withClient((client) => client.query(`SELECT count(*)::int AS count FROM ${schema}.leases`))).rows).toEqual([{ count: 0 }]);
    expect(logger.warnings.filter((message) => /lease|partition|connection/.test(message))).toEqual([]);
    console.log(
      `10,000 conversations: suspended in ${suspendMs} ms (${Math.round(conversations / (suspendMs / 1000))}/s), approved and completed in ${resumeMs} ms (${Math.round(conversations / (resumeMs / 1000))}/s), ${inFlight} in flight, lease ${leaseMs} ms`,
    );
  }, 180_000);
});
