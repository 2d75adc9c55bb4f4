// The dashboard's handler served by node:http (what `phronomy ui` runs):
// each IncomingMessage becomes a standard Request, each Response is written
// back. Binds 127.0.0.1 unless told otherwise.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Where `serveDashboard` listens. */
export interface ServeOptions {
  /** Default 127.0.0.1: only this machine reaches the page. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
}

/** A dashboard served on node:http. */
export interface ServedDashboard {
  /** The node:http server. */
  readonly server: Server;
  /** `http://host:port`. */
  readonly origin: string;
  /** Stops listening and closes its connections. */
  close(): Promise<void>;
}

/** A request body larger than this is cut off (the handler refuses it). */
const requestBodyMax = 128 * 1024;

export async function serveHandler(handle: (request: Request) => Promise<Response>, options: ServeOptions = {}): Promise<ServedDashboard> {
  const host = options.host ?? "127.0.0.1";
  const server = createServer((incoming, outgoing) => {
    toRequest(incoming, host)
      .then(handle)
      .then(
        (response) => writeResponse(response, outgoing, incoming.method === "HEAD"),
        (error: unknown) => {
          if (!outgoing.headersSent) outgoing.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
          outgoing.end(`internal error: ${error instanceof Error ? error.message : String(error)}\n`);
        },
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    origin: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function toRequest(incoming: IncomingMessage, host: string): Promise<Request> {
  const url = new URL(incoming.url ?? "/", `http://${incoming.headers.host ?? host}`);
  const headers = new Headers();
  for (const [key, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(key, item);
  }
  const method = incoming.method ?? "GET";
  if (method === "GET" || method === "HEAD") return new Request(url, { method, headers });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of incoming) {
    size += (chunk as Buffer).length;
    if (size > requestBodyMax) break;
    chunks.push(chunk as Buffer);
  }
  return new Request(url, { method, headers, body: Buffer.concat(chunks) });
}

async function writeResponse(response: Response, outgoing: ServerResponse, head: boolean): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    headers[key] = value;
  });
  outgoing.writeHead(response.status, headers);
  if (head || response.body === null) {
    outgoing.end();
    return;
  }
  outgoing.end(Buffer.from(await response.arrayBuffer()));
}
