// The dedicated connection on which a PostgreSQL store LISTENs to its
// approval inbox channels (docs/decisions/0011-approval-inbox.md): a filed
// decision wakes its agent's owner at once instead of at the next poll, a
// filed start every owner (which claims its own), and a filer hears its
// filed starts move (docs/decisions/0047).
//
// Rules kept here:
// * One `pg.Client` of its own, never a pooled one: a LISTEN belongs to a
//   session, and a pooled connection is handed to other work.
// * A notification is a hint, never the only path: one sent while the
//   listener is reconnecting is lost, so the store also polls the inbox on
//   its lease tick, and `reconnected` is called after every (re)connection
//   so the owner looks at once.
// * The connection does not keep the process alive (like the lease timer):
//   it is background work of an environment the application closes.

import pg from "pg";

/** How long the listener waits before connecting again after its
 * connection failed or dropped: long enough not to hammer a database that
 * is restarting, short next to the lease tick that polls meanwhile. */
export const listenerReconnectMs = 1_000;

export class InboxListener {
  private client: pg.Client | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly config: pg.ClientConfig,
    /** The channels listened on, in this order (one LISTEN each). */
    private readonly channels: readonly string[],
    /** Called with each notification's channel and payload. */
    private readonly notified: (channel: string, payload: string) => void,
    /** Called after every successful (re)connection. */
    private readonly reconnected: () => void,
  ) {}

  /** Whether the LISTEN connection is up now. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  start(): void {
    if (this.closed || this.client !== undefined || this.connecting !== undefined) return;
    this.connecting = this.connect().finally(() => {
      this.connecting = undefined;
    });
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    let lost = false;
    const onLost = (): void => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", onLost);
    client.on("notification", (message) => {
      if (this.channels.includes(message.channel) && message.payload !== undefined && message.payload !== "") this.notified(message.channel, message.payload);
    });
    try {
      await client.connect();
      unrefSocket(client);
      for (const channel of this.channels) await client.query(`LISTEN "${channel}"`);
    } catch {
      onLost();
      return;
    }
    if (this.closed || lost) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reconnected();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.start();
    }, listenerReconnectMs);
    this.reconnectTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/** `pg` keeps the socket private; reaching it is the only way to let an
 * idle LISTEN connection not hold the process open. */
function unrefSocket(client: pg.Client): void {
  const stream = (client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream;
  stream?.unref?.();
}
