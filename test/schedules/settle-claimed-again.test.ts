// A firing claimed again settles only under the later claim (SQLite;
// docs/decisions/0135; the PostgreSQL case is in test/postgres/schedules.test.ts):
// the first claimer, slow past the retry time, settles nothing — it once
// settled the firing refused while the later claimer's keyed start ran.

import { describe, it } from "vitest";
import { echoModel, openEnvironment } from "../runtime/helpers.js";
import { settleUnderEachClaim } from "./claimed-again.js";

describe("a firing claimed again (SQLite)", () => {
  it("is settled under the later claim only: the first claimer's settlement applies nothing", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: echoModel({ lookup: false }) });
    // An hour on: the sweep leaves it alone while the test claims it.
    const made = await support.conversation("user-1").schedule("Reminder", { at: Date.now() + 3_600_000 });
    await settleUnderEachClaim(env, made.scheduleId);
  });
});
