// A message taken from the durable queue whose Run failed before it ran
// (docs/decisions/0062, "A failed queued Run"): the compiled
// `queuedRunVerdict` against the reference model's rule for every start
// answer (docs/decisions/0096: the one class every verdict over a start's
// answer reads). How each error code reaches it, against the set the host
// once kept, is test/core/start-answer.test.ts.

import { beforeAll, expect, it } from "vitest";
import { QueuedRunVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { queuedRunVerdictFor } from "../model/reference-conversations.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rule for every start answer", () => {
  for (let answer = 0; answer <= Answer.End + 1; answer += 1) {
    expect(core.queuedRunVerdict(answer), `answer ${answer}`).toBe(queuedRunVerdictFor(answer));
  }
  expect(core.queuedRunVerdict(0xffff_ffff)).toBe(Verdict.None);
});

it("only a refusal for good writes the message terminal; an answer that is no failure answers nothing", () => {
  for (const answer of [Answer.Full, Answer.Internal, Answer.Refused]) expect(core.queuedRunVerdict(answer)).toBe(Verdict.WriteTerminal);
  const keep = [Answer.BusyByPolicy, Answer.LeaseNotHeld, Answer.BusyHeld, Answer.StoreFailed, Answer.CoreFailed, Answer.RehydrationRequired];
  for (const answer of [...keep, Answer.Stopping, Answer.ExecutionExists]) expect(core.queuedRunVerdict(answer)).toBe(Verdict.KeepQueued);
  for (const answer of [Answer.None, Answer.Started, Answer.Queued, Answer.End]) expect(core.queuedRunVerdict(answer)).toBe(Verdict.None);
});
