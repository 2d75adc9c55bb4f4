// The simulated cluster store's leases and fencing (cluster-store.ts), the
// semantics the PostgreSQL store keeps (docs/decisions/0010, 0030, 0042):
// a lease is taken when free, expired or already held (epoch + 1 on a
// takeover), renewed by its holder's tick, taken over in the background by
// a process that asked for it once it expires; a write carrying an epoch no
// longer held is refused with nothing written; admissions stop once the
// lease was not renewed in time. And the
// faults: a killed handle's calls never settle, a lost connection fails them.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ExecutionRehydrationRequiredError, StoreError } from "../../host/errors.js";
import type { PrepareExecutionResult } from "../../host/store/records.js";
import { prepare, providerBarrier } from "../store/fixtures.js";
import { Cluster } from "./cluster-store.js";
import { quietSignals } from "../../host/store/capabilities.js";

const leaseMs = 3_000;

describe("the simulated cluster store's leases and fencing", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function opened(): { cluster: Cluster; first: ReturnType<Cluster["storeFor"]>; second: ReturnType<Cluster["storeFor"]> } {
    const cluster = new Cluster(leaseMs, true);
    return { cluster, first: cluster.storeFor("p1"), second: cluster.storeFor("p2") };
  }

  it("grants a free lease at epoch 1, refuses it to another process while live, renews it on the holder's tick", async () => {
    const { cluster, first, second } = opened();
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, owner: "p1", epoch: 1, created: true });
    expect(await second.acquireLease("support")).toMatchObject({ acquired: false, owner: "p1", epoch: 1 });
    vi.advanceTimersByTime(leaseMs * 3);
    expect(cluster.leases.get("support")).toMatchObject({ owner: "p1", epoch: 1 });
    expect(first.leaseOf("support")?.epoch).toBe(1);
    expect(second.leaseOf("support")).toBeUndefined();
  });

  it("lets a process that asked take an expired lease over at epoch + 1 and tells it; the former holder's writes are fenced", async () => {
    const { cluster, first, second } = opened();
    await first.acquireLease("support");
    expect(await first.run(prepare("e1"))).toMatchObject({ outcome: "active", revision: 1 });
    await second.acquireLease("support");
    const taken: number[] = [];
    second.listen({ ...quietSignals, leaseAcquired: (_agentId, grant) => taken.push(grant.epoch) });
    first.stalledUntil = Date.now() + leaseMs * 2;
    vi.advanceTimersByTime(leaseMs + leaseMs / 3);
    expect(taken).toEqual([2]);
    expect(cluster.leases.get("support")).toMatchObject({ owner: "p2", epoch: 2 });
    expect(first.heldEpochOf("support")).toBe(1);
    const fenced = first.run(providerBarrier("e1", 1));
    await expect(fenced).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(fenced).rejects.toMatchObject({ details: { reason: "lease_lost", owner: "p1", epoch: 1 } });
    expect(cluster.execution("e1")?.revision).toBe(1);
    const refused = (await first.run(prepare("e2"))) as PrepareExecutionResult;
    expect(refused).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY" } });
    expect(cluster.execution("e2")).toBeUndefined();
    expect(await second.run(providerBarrier("e1", 1))).toEqual({ revision: 2 });
  });

  it("refuses admissions once the lease was not renewed in time", async () => {
    const { cluster, first } = opened();
    await first.acquireLease("support");
    first.stalledUntil = Date.now() + leaseMs * 2;
    vi.advanceTimersByTime(leaseMs);
    expect(first.leaseOf("support")).toBeUndefined();
    expect(first.heldEpochOf("support")).toBe(1);
    expect(await first.run(prepare("e1"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY", details: { reason: "lease_not_held" } } });
    expect(cluster.execution("e1")).toBeUndefined();
  });

  it("lets a released lease be taken at once", async () => {
    const { first, second } = opened();
    await first.acquireLease("support");
    await first.releaseLease("support");
    expect(await second.acquireLease("support")).toMatchObject({ acquired: true, owner: "p2", epoch: 2 });
  });

  it("a killed handle's calls never settle; a lost connection fails reads and writes with StoreError, writing nothing", async () => {
    const { cluster, first, second } = opened();
    await second.acquireLease("support");
    second.disconnectedUntil = Date.now() + 1_000;
    await expect(second.getExecution("e1")).rejects.toBeInstanceOf(StoreError);
    await expect(second.run(prepare("e1"))).rejects.toMatchObject({ code: "STORE", details: { outcome: "not_committed" } });
    expect(cluster.execution("e1")).toBeUndefined();
    first.kill();
    let settled = false;
    void first.getExecution("e1").finally(() => {
      settled = true;
    });
    void first.run(prepare("e2", "other")).finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(settled).toBe(false);
  });
});
