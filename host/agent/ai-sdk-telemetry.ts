// Whether anyone listens to the AI SDK's telemetry, asked before each model
// call (docs/decisions/0067). The SDK builds its telemetry for every
// `generateText` call unless told `telemetry: { isEnabled: false }`: a
// dispatcher with two dozen merged callbacks, a copy of every event with
// credentials redacted, and a `diagnostics_channel` tracing channel looked
// up anew for each step (≈7% of a run's CPU, a third of the SDK's own
// share). With no listener all of it is thrown away, so Phronomy turns it
// off exactly then, and leaves it on, untouched, as soon as one exists.
//
// The SDK's two listeners, checked the way the SDK itself checks them:
// integrations registered globally (`registerTelemetry`, kept in
// `globalThis.AI_SDK_TELEMETRY_INTEGRATIONS`), and subscribers of its
// tracing channel `ai:telemetry` (on Node, through
// `process.getBuiltinModule`; a runtime without them has no channel). The
// answer is read per call, never cached: an application may register an
// integration or subscribe at any moment, and the next call sees it.

/** The SDK's tracing channel name (`AI_SDK_TELEMETRY_TRACING_CHANNEL`). */
const tracingChannelName = "ai:telemetry";

interface TracingChannelLike {
  readonly hasSubscribers?: boolean;
}

interface DiagnosticsChannelModule {
  tracingChannel?(name: string): TracingChannelLike;
}

/** The tracing channel, looked up once: Node's `tracingChannel(name)` makes
 * a new object over the same named channels at each call, and holding one
 * keeps those channels alive for later subscribers to find. `null` where
 * the runtime has no diagnostics channel (the SDK then traces nothing). */
let channel: TracingChannelLike | null | undefined;

function tracingChannel(): TracingChannelLike | null {
  if (channel !== undefined) return channel;
  channel = null;
  const runtime = globalThis.process as (NodeJS.Process & { getBuiltinModule?(id: string): unknown }) | undefined;
  if (runtime?.release?.name !== "node") return channel;
  try {
    const module = runtime.getBuiltinModule?.("node:diagnostics_channel") as DiagnosticsChannelModule | undefined;
    channel = module?.tracingChannel?.(tracingChannelName) ?? null;
  } catch {
    channel = null;
  }
  return channel;
}

/** True when an AI SDK telemetry integration is registered or its tracing
 * channel has a subscriber: the call must then build its telemetry. */
export function aiSdkTelemetryListened(): boolean {
  const integrations = (globalThis as { AI_SDK_TELEMETRY_INTEGRATIONS?: readonly unknown[] }).AI_SDK_TELEMETRY_INTEGRATIONS;
  if (integrations !== undefined && integrations !== null && integrations.length > 0) return true;
  const found = tracingChannel();
  // The SDK treats a channel that cannot say (no `hasSubscribers`, Node
  // before 20.13) as listened to; so does this.
  return found !== null && found.hasSubscribers !== false;
}

/** The `telemetry` setting of a call no one listens to. Shared: the SDK
 * only reads it. */
export const telemetryOff = Object.freeze({ isEnabled: false as const });
