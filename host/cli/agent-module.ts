// Agent modules: how `phronomy run`, `approve`, `reject` and `recover` get
// an agent's model, tools and instructions, which live in the user's code
// and never in the store. A module's default export is an agent definition
// (`env.agent(...)`'s argument, with `model` optional), or a function —
// possibly async — that returns one given what the command line chose:
//
//   export default defineAgent({ id: "support", tools, instructions });
//   export default defineAgent(({ model }) => ({ id: "support", model: model ?? myModel, tools }));
//
// The model: an object definition's `model` is replaced by `--model` when
// one is given; a function decides for itself (it receives the `--model`
// choice) and only when it returns no model is `--model` used. With no
// model anywhere, the command fails and says how to name one.
//
// `.ts` modules load through tsx (registered by the launcher), `.js` and
// `.mjs` ones natively.

import { cliDocsPath } from "./docs-path.js";
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AgentDefinition } from "../index.js";
import type { AgentModuleContext, AgentModuleDefinition } from "./define-agent.js";
import { CliError } from "./errors.js";
import { BASE_URL_VARIABLE, MODEL_VARIABLE } from "./models.js";

export { defineAgent, type AgentModuleContext, type AgentModuleDefinition, type AgentModuleExport } from "./define-agent.js";

export interface LoadedAgent {
  readonly definition: AgentDefinition;
  /** Absolute path of the module. */
  readonly modulePath: string;
}

/** Imports the module at `path` and builds its agent definition. */
export async function loadAgentModule(path: string, context: AgentModuleContext): Promise<LoadedAgent> {
  const modulePath = resolve(path);
  if (!existsSync(modulePath) || !statSync(modulePath).isFile()) {
    throw new CliError(
      "AGENT_MODULE",
      `no agent module at ${modulePath}; give the path of a .ts or .js file whose default export is the agent (see ${cliDocsPath()})`,
    );
  }
  let exported: unknown;
  try {
    const imported = (await import(pathToFileURL(modulePath).href)) as { default?: unknown };
    exported = imported.default;
  } catch (error) {
    const unknownExtension = (error as { code?: unknown } | null)?.code === "ERR_UNKNOWN_FILE_EXTENSION";
    const hint = unknownExtension ? " (TypeScript agent modules need tsx beside phronomy: npm install --save-dev tsx; or compile the module to .js)" : "";
    throw new CliError(
      "AGENT_MODULE",
      `cannot load the agent module ${modulePath}: ${error instanceof Error ? error.message : String(error)}${hint}`,
      undefined,
      { cause: error },
    );
  }
  if (exported === undefined) {
    throw new CliError(
      "AGENT_MODULE",
      `the agent module ${modulePath} has no default export; export default { id, model?, tools, instructions } or a function returning it`,
    );
  }
  const produced = await definitionOf(exported, context, modulePath);
  return { definition: withModel(produced.definition, produced.fromFunction, context, modulePath), modulePath };
}

async function definitionOf(
  exported: unknown,
  context: AgentModuleContext,
  modulePath: string,
): Promise<{ definition: AgentModuleDefinition; fromFunction: boolean }> {
  let value = exported;
  const fromFunction = typeof exported === "function";
  if (fromFunction) {
    try {
      value = await (exported as (context: AgentModuleContext) => unknown)(context);
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(
        "AGENT_MODULE",
        `the agent module ${modulePath}: its default export threw: ${error instanceof Error ? error.message : String(error)}`,
        undefined,
        { cause: error },
      );
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CliError(
      "AGENT_MODULE",
      `the agent module ${modulePath} must export an agent definition { id, model?, tools, instructions } (or a function returning one), got ${Array.isArray(value) ? "an array" : typeof value}`,
    );
  }
  const definition = value as AgentModuleDefinition;
  if (typeof definition.id !== "string" || definition.id.length === 0) {
    throw new CliError(
      "AGENT_MODULE",
      `the agent defined in ${modulePath} has no "id": every agent needs one (it names the agent's conversation in the store)`,
    );
  }
  return { definition, fromFunction };
}

function withModel(definition: AgentModuleDefinition, fromFunction: boolean, context: AgentModuleContext, modulePath: string): AgentDefinition {
  const model = fromFunction ? (definition.model ?? context.model) : (context.model ?? definition.model);
  if (model === undefined) {
    throw new CliError(
      "MODEL_NOT_CONFIGURED",
      `agent "${definition.id}" (${modulePath}) has no model: pass --model openai-compatible:<model> --base-url <url> (or set ${MODEL_VARIABLE} and ${BASE_URL_VARIABLE}), or give the module a model`,
    );
  }
  return { ...definition, model };
}
