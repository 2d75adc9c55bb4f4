// Differential fuzzing of the core's pure queries (docs/decisions/0087):
// random arguments — mostly in range, some anywhere in the u32 range — to
// the compiled core, debug and release builds, and to the reference model
// (test/model/reference-queries.ts) must give the same answer. The
// exhaustive walks in test/core cover every in-range fact; this run covers
// the rest of the argument space. The seed is printed, and fast-check
// names it in every failure; replay a run with FUZZ_SEED=<seed>.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CancelAnswer,
  CancelRoundFact,
  ChildFact,
  ClaimAnswer,
  ClaimFact,
  DueFireFact,
  DurableWatchFact,
  EnqueueRefusalFact,
  FailedAttemptFact,
  FiledDecisionFact,
  FiledStartFact,
  FiledStartFollowFact,
  FiledStartVerdict,
  KeyedStartFact,
  Limit,
  ObservedRowFact,
  RefusedStartFact,
  ReplaceFact,
  ScheduleFact,
  ScheduleFiringFact,
  StartAnswer,
  StoredSignalFact,
  TurnCallFact,
  TurnCallVerdict,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule, type CoreBuild } from "../../host/core/load-core.js";
import { queuedRunVerdictFor } from "../model/reference-conversations.js";
import { cancelRoundVerdictFor, enqueueRefusalVerdictFor } from "../model/reference-enqueue-cancel.js";
import { filedDecisionVerdictFor, filedStartFollowVerdictFor } from "../model/reference-filed-follow.js";
import { durableWatchVerdictFor, observedRowVerdictFor } from "../model/reference-observed-row.js";
import { failedAttemptVerdictFor } from "../model/reference-failed-attempt.js";
import { refusedStartVerdictFor } from "../model/reference-refused-start.js";
import {
  childStartVerdictFor,
  claimedDecisionVerdictFor,
  claimedStartVerdictFor,
  dueFireVerdictFor,
  filedStartVerdictFor,
  keyedStartVerdictFor,
  replaceVerdictFor,
  scheduleClaimVerdictFor,
  scheduleFiringVerdictFor,
  storedSignalVerdictFor,
  toolCallsToStartFor,
  turnVerdictsFor,
  turnCallVerdictFor,
} from "../model/reference-queries.js";

const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);
const runs = Number(process.env.FUZZ_RUNS ?? 2_000);
console.log(`query differential fuzzing: FUZZ_SEED=${seed} FUZZ_RUNS=${runs}`);

/** An argument in `0 ..< end + 2` four times in five, else any u32. */
function argument(end: number): fc.Arbitrary<number> {
  return fc.oneof({ weight: 4, arbitrary: fc.nat({ max: end + 1 }) }, { weight: 1, arbitrary: fc.nat({ max: 0xffff_ffff }) });
}

async function coreOf(build: CoreBuild): Promise<ControlCore> {
  return new ControlCore(await loadCoreModule(build), { agentsMax: 1, executionsMax: 1 });
}

for (const build of ["debug", "release"] as const) {
  describe(`the ${build} build`, () => {
    it(`judges every call of random model turns as the model judges the whole turn (seed ${seed})`, async () => {
      const core = await coreOf(build);
      const call = fc.record({ waits: fc.boolean(), needsApproval: fc.boolean(), failed: fc.boolean() });
      fc.assert(
        fc.property(fc.array(call, { maxLength: 12 }), argument(TurnCallFact.End), (calls, facts) => {
          expect(core.turnCallVerdict(facts)).toBe(turnCallVerdictFor(facts));
          // The session's walk: the turn's facts, then each call in order.
          const turnWaits = calls.some((c) => c.waits && !c.failed);
          let taken = false;
          const verdicts = calls.map((c) => {
            let bits = turnWaits ? TurnCallFact.TurnWaits : 0;
            if (c.waits) bits |= TurnCallFact.Waits;
            if (c.needsApproval) bits |= TurnCallFact.NeedsApproval;
            if (c.failed) bits |= TurnCallFact.Failed;
            if (taken) bits |= TurnCallFact.WaitTaken;
            const verdict = core.turnCallVerdict(bits);
            if (verdict === TurnCallVerdict.AskWait) taken = true;
            return verdict;
          });
          expect(verdicts).toEqual(turnVerdictsFor(calls));
        }),
        { seed, numRuns: runs },
      );
    });

    it(`answers the schedule and replaceFrom queries as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      fc.assert(
        fc.property(argument(ScheduleFact.End), argument(ScheduleFiringFact.End), argument(StartAnswer.End), (claim, firing, answer) => {
          expect(core.scheduleClaimVerdict(claim)).toBe(scheduleClaimVerdictFor(claim));
          expect(core.replaceVerdict(claim % (2 * ReplaceFact.End))).toBe(replaceVerdictFor(claim % (2 * ReplaceFact.End)));
          expect(core.replaceVerdict(answer)).toBe(replaceVerdictFor(answer));
          expect(core.scheduleFiringVerdict(firing, answer)).toBe(scheduleFiringVerdictFor(firing, answer));
        }),
        { seed, numRuns: runs },
      );
    });

    it(`answers what comes of a start's answer — a child's, a queued message's, a filed start's — as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      fc.assert(
        fc.property(argument(StartAnswer.End), argument(ChildFact.End), argument(FiledStartFact.End), (answer, facts, filed) => {
          expect(core.childStartVerdict(answer, facts)).toBe(childStartVerdictFor(answer, facts));
          expect(core.queuedRunVerdict(answer)).toBe(queuedRunVerdictFor(answer));
          expect(core.filedStartVerdict(answer, filed)).toBe(filedStartVerdictFor(answer, filed));
        }),
        { seed, numRuns: runs },
      );
    });

    it(`answers a keyed start's refusal, a due wait's fire, a stored signal and an inbox claim as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      fc.assert(
        fc.property(
          argument(StartAnswer.End),
          argument(KeyedStartFact.End),
          argument(DueFireFact.End),
          argument(StoredSignalFact.End),
          argument(ClaimAnswer.End),
          argument(FiledStartVerdict.Refused + 1),
          argument(ClaimFact.End),
          (answer, keyed, due, signal, claimAnswer, fate, claim) => {
            expect(core.keyedStartVerdict(answer, keyed)).toBe(keyedStartVerdictFor(answer, keyed));
            expect(core.dueFireVerdict(due)).toBe(dueFireVerdictFor(due));
            expect(core.storedSignalVerdict(signal)).toBe(storedSignalVerdictFor(signal));
            expect(core.claimedDecisionVerdict(claimAnswer, claim)).toBe(claimedDecisionVerdictFor(claimAnswer, claim));
            expect(core.claimedStartVerdict(fate, claim)).toBe(claimedStartVerdictFor(fate, claim));
          },
        ),
        { seed, numRuns: runs },
      );
    });

    it(`answers a refused enqueue, a refused start, a cancel by id's round, a filer's read of what it filed and a wait on a row as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      fc.assert(
        fc.property(
          argument(StartAnswer.End),
          argument(EnqueueRefusalFact.End),
          argument(CancelAnswer.End),
          argument(CancelRoundFact.End),
          argument(Limit.CancelRoundsMax),
          argument(FiledDecisionFact.End),
          argument(FiledStartFollowFact.End),
          argument(ObservedRowFact.End),
          argument(DurableWatchFact.End),
          argument(RefusedStartFact.End),
          (answer, enqueue, cancel, facts, round, decision, start, observed, watch, refused) => {
            expect(core.enqueueRefusalVerdict(answer, enqueue)).toBe(enqueueRefusalVerdictFor(answer, enqueue));
            expect(core.refusedStartVerdict(answer, refused)).toBe(refusedStartVerdictFor(answer, refused));
            expect(core.cancelRoundVerdict(cancel, facts, round)).toBe(cancelRoundVerdictFor(cancel, facts, round));
            expect(core.filedDecisionVerdict(decision)).toBe(filedDecisionVerdictFor(decision));
            expect(core.filedStartFollowVerdict(start)).toBe(filedStartFollowVerdictFor(start));
            expect(core.observedRowVerdict(observed)).toBe(observedRowVerdictFor(observed));
            expect(core.durableWatchVerdict(watch)).toBe(durableWatchVerdictFor(watch));
          },
        ),
        { seed, numRuns: runs },
      );
    });

    it(`answers what comes of a failed attempt as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      fc.assert(
        fc.property(argument(FailedAttemptFact.End), argument(12), argument(11), (facts, number, maxRetries) => {
          expect(core.failedAttemptVerdict(facts, number, maxRetries)).toBe(failedAttemptVerdictFor(facts, number, maxRetries));
        }),
        { seed, numRuns: runs },
      );
    });

    it(`answers how many tool calls start as the model does (seed ${seed})`, async () => {
      const core = await coreOf(build);
      // A batch's counts in order (started ≤ calls, settled ≤ started) most
      // of the time, anything otherwise.
      const counts = fc.oneof(
        {
          weight: 4,
          arbitrary: fc
            .tuple(fc.nat({ max: Limit.InFlightMax }), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }))
            .map(([calls, a, b]) => {
              const started = Math.floor(calls * a);
              return [calls, started, Math.floor(started * b)] as const;
            }),
        },
        { weight: 1, arbitrary: fc.tuple(argument(Limit.InFlightMax), argument(Limit.InFlightMax), argument(Limit.InFlightMax)) },
      );
      fc.assert(
        fc.property(counts, argument(Limit.InFlightMax), argument(1), ([calls, started, settled], limit, finished) => {
          expect(core.toolCallsToStart(calls, started, settled, limit, finished)).toBe(toolCallsToStartFor(calls, started, settled, limit, finished));
        }),
        { seed, numRuns: runs },
      );
    });
  });
}
