// `phronomy ui [--host 127.0.0.1] [--port N]`: the dashboard
// (docs/decisions/0038) on the store, served on node:http until Ctrl-C.
// On SQLite it always opens the store as a visitor (docs/decisions/0015):
// it never takes ownership, so the application can start or keep running
// beside it; decisions go through the approval inbox, and retry and
// recover (the owner's) are refused with a message saying where to run
// them. On PostgreSQL it opens the store as one more process that defines
// no agent: decisions and cancels go through the inbox to the agents'
// owners.
//
// The URL printed carries the access token; the page needs it on every
// request.

import pc from "../colors.js";
import { Phronomy, type Environment } from "../../index.js";
import { serveDashboard } from "../../ui/index.js";
import type { CliContext } from "../context.js";
import { ExitCode, type ExitCodeValue } from "../errors.js";
import { printJson } from "../format.js";
import { openStore, resolveStore, type StoreLocation } from "../store.js";

export interface UiOptions {
  readonly host?: string;
  readonly port?: number;
}

export async function uiCommand(context: CliContext, options: UiOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openForDashboard(context, location);
  try {
    const served = await serveDashboard(environment, {
      storeLabel: location.path,
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
    });
    try {
      announce(context, served.url, options.host);
      await untilStopped();
    } finally {
      await served.close();
    }
  } finally {
    await environment.close();
  }
  return ExitCode.ok;
}

async function openForDashboard(context: CliContext, location: StoreLocation): Promise<Environment> {
  if (location.kind === "postgres") return openStore(location, { logger: context.logger, recover: false });
  return Phronomy.open({ store: location.path, visitor: true, logger: context.logger });
}

export function announce(context: CliContext, url: string, host: string | undefined): void {
  if (context.json) printJson({ url });
  context.logger.line(`${pc.bold("Phronomy dashboard")}: ${url}`);
  context.logger.line(pc.dim("The URL carries the page's access token: share it only with people who may decide. Ctrl-C stops the dashboard."));
  if (host !== undefined && host !== "127.0.0.1" && host !== "localhost" && host !== "::1") {
    context.logger.line(
      pc.yellow(`warning: the dashboard listens on ${host}, reachable from other machines; anyone holding the URL can approve, cancel and retry`),
    );
  }
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
