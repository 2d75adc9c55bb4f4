// A real HTTP server (node:http) in front of `chatRoutes`, for the chat
// transport's tests: it logs every request, and it can cut a streamed
// answer off — end the connection after the next responses' first few
// server-sent events, the body left unfinished — as a dropped connection
// or a proxy's timeout would, or answer requests with a status of the
// test's choosing.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ChatRoutes } from "../../host/index.js";

export interface ChatHttpServer {
  readonly url: string;
  readonly port: number;
  /** `METHOD path?query` of every request, in order. */
  readonly requests: string[];
  /** Cuts the next streamed responses off after these many events each (one entry per response). */
  dropAfter(...events: number[]): void;
  /** Answers the requests `match` picks with `status` (a JSON error) instead of the routes. */
  refuse(match: (method: string, url: URL) => boolean, status: number): void;
  /** How many streamed responses were cut off so far. */
  readonly drops: number;
  close(): Promise<void>;
}

export async function serveChat(routes: () => ChatRoutes, port = 0): Promise<ChatHttpServer> {
  const requests: string[] = [];
  const drops: number[] = [];
  let dropped = 0;
  let refusal: { match: (method: string, url: URL) => boolean; status: number } | undefined;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const method = request.method ?? "GET";
    requests.push(`${method} ${url.pathname}${url.search}`);
    if (refusal?.match(method, url)) {
      response.writeHead(refusal.status, { "content-type": "application/json" });
      response.end(JSON.stringify({ code: "RUNTIME_SHUTDOWN", message: "the server is restarting" }));
      return;
    }
    routes()
      .handle(toRequest(request, url))
      .then((web) => {
        const limit = web.headers.get("content-type")?.startsWith("text/event-stream") ? drops.shift() : undefined;
        if (limit !== undefined) dropped += 1;
        return send(response, web, limit);
      })
      .catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address();
  const bound = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    requests,
    dropAfter: (...events) => void drops.push(...events),
    refuse: (match, status) => {
      refusal = { match, status };
    },
    get drops() {
      return dropped;
    },
    close: () => closeServer(server),
  };
}

function toRequest(request: IncomingMessage, url: URL): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers.set(name, value);
  const body = request.method === "POST" ? (Readable.toWeb(request) as ReadableStream<Uint8Array>) : null;
  return new Request(url, { method: request.method ?? "GET", headers, body, ...(body ? { duplex: "half" } : {}) } as RequestInit);
}

/** Sends `web`; with `limit`, destroys the socket once that many events went out. */
async function send(response: ServerResponse, web: Response, limit: number | undefined): Promise<void> {
  response.writeHead(web.status, Object.fromEntries(web.headers));
  if (web.body === null) return void response.end();
  const reader = web.body.getReader();
  response.on("close", () => void reader.cancel().catch(() => undefined));
  const decoder = new TextDecoder();
  let events = 0;
  for (;;) {
    const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (next.done) break;
    // Written out before a cut: the client has the events up to it.
    await new Promise((resolve) => response.write(next.value, resolve));
    events += decoder.decode(next.value, { stream: true }).split("\n\n").length - 1;
    if (limit !== undefined && events >= limit) {
      await reader.cancel().catch(() => undefined);
      // The connection ends mid-body (no last chunk): a dropped connection to the client.
      response.socket?.end();
      return;
    }
  }
  response.end();
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
