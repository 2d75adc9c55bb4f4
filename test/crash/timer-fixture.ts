// The agent the timer crash test and its child both define: it calls a
// `timer()` tool once, then answers with what the call returned.

import { z } from "zod";
import { timer, type AgentDefinition } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";

const pause = timer({ inputSchema: z.object({ ms: z.number().int().min(0) }), until: ({ ms }) => ms });

export function sleeperDefinition(ms: number): AgentDefinition {
  const model = scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "pause", input: { ms } }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
  return { id: "sleeper", model, tools: { pause } };
}
