// What an agent module for the `phronomy` command exports (docs/cli.md,
// "Agent modules"): an agent definition whose model the command line may
// supply, or a function of what the command line chose. Exported by the
// package (`import { defineAgent } from "phronomy"`), so a module needs
// nothing but the public entry; the loading is `agent-module.ts`'s.

import type { AgentDefinition, LanguageModel } from "../index.js";

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
export type AgentModuleExport =
  | AgentModuleDefinition
  | ((context: AgentModuleContext) => AgentModuleDefinition | Promise<AgentModuleDefinition>);

/** Types an agent module's default export for `phronomy run`, `approve`,
 * `reject`, `retry` and `recover`; returns it unchanged. */
export function defineAgent<T extends AgentModuleExport>(definition: T): T {
  return definition;
}
