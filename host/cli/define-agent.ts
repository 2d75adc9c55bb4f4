// What an agent module for the `phronomy` command exports (docs/cli.md,
// "Agent modules"): an agent definition whose model the command line may
// supply, or a function of what the command line chose. Exported by the
// package (`import { defineAgent } from "phronomy"`), so a module needs
// nothing but the public entry; the loading is `agent-module.ts`'s. It
// takes its types from the modules that declare them, not from the
// package entry that exports it (which would close a circle).

import type { LanguageModel } from "../agent/model.js";
import type { AgentDefinition } from "../runtime/options.js";

/** What the command line hands a module's function. */
export interface AgentModuleContext {
  /** The model named by `--model` / PHRONOMY_MODEL, if any. */
  readonly model: LanguageModel | undefined;
  /** The store the command runs against: the SQLite file's absolute path, or
   * the PostgreSQL URL without its password. */
  readonly storePath: string;
}

/** An agent definition whose model the command line may supply. */
export type AgentModuleDefinition = Omit<AgentDefinition, "model"> & { readonly model?: LanguageModel };

/** An agent module's default export: a definition, or a function (possibly
 * async) returning one given what the command line chose. */
export type AgentModuleExport = AgentModuleDefinition | ((context: AgentModuleContext) => AgentModuleDefinition | Promise<AgentModuleDefinition>);

/** Types an agent module's default export for `phronomy run`, `approve`,
 * `reject`, `retry` and `recover`; returns it unchanged. */
export function defineAgent<T extends AgentModuleExport>(definition: T): T {
  return definition;
}
