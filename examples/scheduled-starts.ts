// README, "Scheduled starts": a conversation started at a time, or on a
// cron schedule, by whichever process sharing the store claims the firing
// first (exactly once). Run it (`npx tsx examples/scheduled-starts.ts`): it
// runs one schedule now, lets a near one fire on its own, and lists them.

import { Phronomy } from "phronomy";
import { scriptedModel } from "phronomy/testing";

const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1) as { content: string | { text?: string }[] };
  const text = typeof last.content === "string" ? last.content : (last.content[0]?.text ?? "");
  return { text: `done: ${text}` };
});
const userId = "ada";

// #region readme
const env = await Phronomy.open({ store: "./agents.db" });
const support = env.agent({ name: "support", model, onBusy: "enqueue" }); // a firing while busy queues
const chat = support.conversation(userId);

// Once, at a time ("check back tomorrow"); or recurring, five cron fields, UTC.
const followUp = await chat.schedule("Check back on order 42", { at: new Date(Date.now() + 24 * 60 * 60 * 1000) });
const digest = await chat.schedule("Send the daily digest", { cron: "0 9 * * *" });

const ran = await env.runSchedule(digest.scheduleId); // fire now; the next slot stays 09:00
ran.lastFiring; // { slotAt, firedAt, outcome: "started" | "queued" | "refused", executionId, error }
await env.cancelSchedule(followUp.scheduleId);
const schedules = await env.schedules({ agentId: userId, state: "active" }); // each: nextRunAt, firings, lastFiring
// #endregion

console.log(`ran now: ${ran.lastFiring?.outcome}, ${(await env.wait(ran.lastFiring?.executionId as string).result).output}`);
console.log(`next digest at 09:00 UTC: ${new Date(ran.nextRunAt as number).toISOString().slice(11, 16)}`);
const soon = await chat.schedule("Ping", { at: Date.now() + 200 });
while ((await env.schedule(soon.scheduleId))?.state !== "done") await new Promise((resolve) => setTimeout(resolve, 50));
const fired = await env.schedule(soon.scheduleId);
console.log(`fired on its own: ${(await env.wait(fired?.lastFiring?.executionId as string).result).output}`);
console.log(`active: ${schedules.map((schedule) => schedule.cron ?? "once").join(", ")}`);
await env.close();
