/**
 * `phronomy/testing`: what tests and demos of an application need besides
 * the library itself, kept out of the main entry so that production code
 * does not pull it in by accident. Today: the deterministic scripted model
 * (any AI SDK language model slot takes it), and the name of the SQLite
 * library the store uses on the running runtime.
 *
 * ```ts
 * import { scriptedModel } from "phronomy/testing";
 * const model = scriptedModel([{ toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] }, { text: "Shipped." }]);
 * ```
 *
 * @module phronomy/testing
 */

export {
  scriptedModel,
  streamDeltasMax,
  scriptedLatencyMsMax,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedTurn,
  type ScriptedToolCall,
  type ScriptedSource,
  type ScriptedFile,
  type Script,
  type ScriptFunction,
  type ScriptContext,
} from "./agent/scripted-model.js";
export { sqliteDriverName, type SqliteDriverName } from "./store/sqlite/driver.js";
