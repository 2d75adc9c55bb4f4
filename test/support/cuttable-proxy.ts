// A TCP proxy in front of the test's PostgreSQL (node:net), so a test can
// cut and restore "the server" deterministically without touching the real
// one, which other test files share:
//
// * `down()` closes every connection through it and refuses new ones (a
//   server restart as the client sees it: its sessions end, connecting
//   fails until it is back); `up()` accepts again on the same port.
// * `cutWhen(match)`: the next chunk a client sends that `match`es (its
//   text, latin1) is not forwarded — its connection is destroyed instead,
//   so the statement in it never reaches the server (a connection killed
//   just before a statement ran: read back, it did not commit); with
//   `forward`, the chunk reaches the server first and only its answer is
//   lost (a single statement commits: read back, it did).
// * `holdWhen(match)`: the next matching chunk, and everything its
//   connection sends after it, waits until `release()` (a statement stuck
//   on its way, to widen a window the test needs to be in).
//
// Only the client's bytes are looked at; the server's are passed through.

import net from "node:net";

type Match = (text: string) => boolean;

interface Pair {
  readonly client: net.Socket;
  readonly server: net.Socket;
  /** Chunks waiting for a hold's release, in order. */
  held: Buffer[] | undefined;
}

export interface Hold {
  /** Resolves when a matching chunk was caught. */
  readonly caught: Promise<void>;
  /** Forwards what was held, and lets the connection go on. */
  release(): void;
}

export class CuttableProxy {
  private readonly pairs = new Set<Pair>();
  private server: net.Server | undefined;
  private cuts: { match: Match; forward: boolean; done: () => void }[] = [];
  private holds: { match: Match; caught: () => void; pairs: Pair[]; released: boolean }[] = [];

  private constructor(
    private readonly targetPort: number,
    private readonly targetHost: string,
    public port = 0,
  ) {}

  /** A proxy on a free port of 127.0.0.1 in front of `target`. */
  static async start(target: string): Promise<CuttableProxy> {
    const url = new URL(target);
    const proxy = new CuttableProxy(Number(url.port || 5432), url.hostname);
    await proxy.up();
    return proxy;
  }

  /** `target` with the proxy's port (and `search` appended, if given). */
  urlFor(target: string): string {
    const url = new URL(target);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.toString();
  }

  async up(): Promise<void> {
    if (this.server !== undefined) return;
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Closes every connection and refuses new ones until `up()`. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.cutAll();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Destroys every connection through the proxy; how many there were. */
  cutAll(): number {
    const count = this.pairs.size;
    for (const pair of [...this.pairs]) this.destroy(pair);
    return count;
  }

  /** The next client chunk that matches is dropped with its connection;
   * `down`: the proxy goes down in the same moment (the read-back of
   * what that statement did cannot connect). */
  cutWhen(match: Match, options: { readonly down?: boolean; readonly forward?: boolean } = {}): Promise<void> {
    return new Promise((resolve) =>
      this.cuts.push({
        match,
        forward: options.forward === true,
        done: () => {
          if (options.down === true) void this.down();
          resolve();
        },
      }),
    );
  }

  /** The next client chunk that matches waits (with what follows it on
   * that connection) until `release()`. */
  holdWhen(match: Match): Hold {
    let caught!: () => void;
    const promise = new Promise<void>((resolve) => {
      caught = resolve;
    });
    const hold = { match, caught, pairs: [] as Pair[], released: false };
    this.holds.push(hold);
    return {
      caught: promise,
      release: () => {
        hold.released = true;
        this.holds = this.holds.filter((other) => other !== hold);
        for (const pair of hold.pairs) this.flush(pair);
      },
    };
  }

  async close(): Promise<void> {
    for (const hold of this.holds) hold.released = true;
    await this.down();
  }

  private accept(client: net.Socket): void {
    const server = net.connect(this.targetPort, this.targetHost);
    const pair: Pair = { client, server, held: undefined };
    this.pairs.add(pair);
    client.on("data", (chunk: Buffer) => this.fromClient(pair, chunk));
    server.on("data", (chunk: Buffer) => {
      if (!client.destroyed) client.write(chunk);
    });
    const end = (): void => this.destroy(pair);
    client.on("error", end).on("close", end);
    server.on("error", end).on("close", end);
  }

  private fromClient(pair: Pair, chunk: Buffer): void {
    if (pair.held !== undefined) {
      pair.held.push(chunk);
      return;
    }
    const text = chunk.toString("latin1");
    const cut = this.cuts.find((candidate) => candidate.match(text));
    if (cut !== undefined) {
      this.cuts = this.cuts.filter((other) => other !== cut);
      if (cut.forward) {
        // Forwarded first: the server runs the statement, its answer is lost.
        this.pairs.delete(pair);
        pair.server.end(chunk);
        pair.client.destroy();
      } else {
        this.destroy(pair);
      }
      cut.done();
      return;
    }
    const hold = this.holds.find((candidate) => !candidate.released && candidate.match(text));
    if (hold !== undefined) {
      pair.held = [chunk];
      hold.pairs.push(pair);
      hold.caught();
      return;
    }
    if (!pair.server.destroyed) pair.server.write(chunk);
  }

  private flush(pair: Pair): void {
    const held = pair.held ?? [];
    pair.held = undefined;
    for (const chunk of held) if (!pair.server.destroyed) pair.server.write(chunk);
  }

  private destroy(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server.destroy();
  }
}
