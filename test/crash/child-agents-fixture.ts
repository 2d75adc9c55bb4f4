// The agents of test/crash/child-agents.test.ts, defined the same way by
// the killed child process and by the test that reopens its store: a
// "support" parent whose tool is the "researcher" agent, both with a model
// that takes a little time per call, so a kill lands anywhere in a run.

import { agentTool, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";

/** Each model call's latency: a run (parent call, child call, parent call)
 * spans ≈ 3 of them plus its commits. */
export const modelLatencyMs = 40;

export function defineAgents(environment: Environment) {
  const researcher = environment.agent({
    name: "researcher",
    model: scriptedModel(
      ({ messages }) => {
        const asked = messages.find((message) => message.role === "user");
        return { text: `found ${typeof asked?.content === "string" ? asked.content : "?"}` };
      },
      { latencyMs: modelLatencyMs },
    ),
  });
  const research = agentTool(researcher, { description: "Researches a topic" });
  const support = environment.agent({
    name: "support",
    model: scriptedModel(
      ({ messages }) => {
        const last = messages.at(-1);
        if (last?.role !== "tool") return { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] };
        return { text: `told ${JSON.stringify(last.results[0]?.output)}` };
      },
      { latencyMs: modelLatencyMs },
    ),
    tools: { research },
  });
  return { researcher, support };
}

/** What every parent ends with. */
export const parentOutput = 'told "found kettles"';
