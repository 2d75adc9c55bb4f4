// Finding what a command names: an execution by its id (or a unique prefix
// of it, as `git` takes commits), and the agent definition that continues
// one of its executions — from `--agent-module`, or the built-in demo agent
// for the demo's executions.

import type { Environment, ExecutionRow } from "../index.js";
import { loadAgentModule, type AgentModuleContext, type LoadedAgent } from "./agent-module.js";
import { DEMO_AGENT_ID, demoAgentDefinition } from "./demo-agent.js";
import { CliError } from "./errors.js";

/** How many of the newest executions a prefix is matched against. A
 * prefix is a convenience for ids just listed by `ls`; older executions
 * are named by their full id. */
export const prefixScanMax = 1_000;
/** A prefix shorter than this is more likely a typo than an id. */
export const prefixLengthMin = 4;
/** How many candidates an ambiguous prefix lists. */
const candidatesShownMax = 5;

export async function findExecution(environment: Environment, storePath: string, idOrPrefix: string): Promise<ExecutionRow> {
  const exact = await environment.execution(idOrPrefix);
  if (exact) return exact;
  const matches =
    idOrPrefix.length >= prefixLengthMin
      ? (await environment.executions({ limit: prefixScanMax })).filter((row) => row.executionId.startsWith(idOrPrefix))
      : [];
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    const shown = matches
      .slice(0, candidatesShownMax)
      .map((row) => row.executionId)
      .join(", ");
    throw new CliError(
      "EXECUTION_NOT_FOUND",
      `"${idOrPrefix}" names ${matches.length} executions (${shown}${matches.length > candidatesShownMax ? ", …" : ""}); give more of the id`,
    );
  }
  throw new CliError("EXECUTION_NOT_FOUND", `no execution "${idOrPrefix}" in the store at ${storePath}; \`phronomy ls\` lists them`, undefined, {
    details: { executionId: idOrPrefix },
  });
}

/** The definition that continues executions of `agentId`. */
export async function agentFor(agentId: string, modulePath: string | undefined, context: AgentModuleContext, what: string): Promise<LoadedAgent> {
  if (modulePath !== undefined) {
    const loaded = await loadAgentModule(modulePath, context);
    if (loaded.definition.id !== agentId) {
      throw new CliError(
        "AGENT_MODULE",
        `${loaded.modulePath} defines agent "${loaded.definition.id}", but ${what} belongs to agent "${agentId}"; pass that agent's module`,
      );
    }
    return loaded;
  }
  if (agentId === DEMO_AGENT_ID) return { definition: demoAgentDefinition(context.storePath), modulePath: "(the built-in demo agent)" };
  throw new CliError(
    "USAGE",
    `${what} belongs to agent "${agentId}": pass --agent-module <path> (the module that defines it), since an agent's model and tools live in your code, not in the store`,
  );
}
