// Talking to an agent from a dashboard mounted in a process that does not
// hold the conversation (decision 0083): the message is filed in the start
// inbox and run by the process that holds it, as any `agent.start` there is,
// and the page shows the answer, read from the shared store.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { createDashboard } from "../../host/ui/index.js";
import { recordingLogger } from "../runtime/helpers.js";
import { atEnd, freshSchemaUrl } from "./database.js";

const origin = "http://127.0.0.1:4200";
const answering = (name: string) =>
  scriptedModel(({ messages }) => {
    const last = messages.findLast((message) => message.role === "user");
    return { text: `${name} answers: ${last?.role === "user" && typeof last.content === "string" ? last.content : ""}` };
  });

describe("the dashboard's talk on PostgreSQL", () => {
  it("files a message for the process holding the conversation; it runs there and the page shows its answer", async () => {
    const url = freshSchemaUrl();
    const holder = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => holder.close());
    holder.agent({ name: "support", model: answering("holder") });
    const first = await holder.admin.start("support", "hello", { conversationId: "c1" }).result;
    expect(first.output).toBe("holder answers: hello");

    const other = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => other.close());
    other.agent({ name: "support", model: answering("other") });
    expect(other.admin.ownedElsewhere("c1")).toBe(true);
    const dashboard = createDashboard(other);
    const sent = await dashboard.handle(
      new Request(`${origin}/actions/start`, {
        method: "POST",
        headers: { origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: dashboard.token, definition: "support", conversationId: "c1", message: "again" }).toString(),
      }),
    );
    const location = new URL(sent.headers.get("location")!, origin);
    expect(location.pathname).toBe("/conversations/c1");
    expect(location.searchParams.get("error")).toBeNull();
    expect(location.searchParams.get("notice")).toBe("sent to support, conversation c1");
    let page = "";
    for (let tries = 0; tries < 200 && !page.includes("holder answers: again"); tries += 1) {
      page = await (await dashboard.handle(new Request(`${origin}/conversations/c1?token=${dashboard.token}&fragment=live`))).text();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(page).toContain("holder answers: again"); // run by the process holding c1
    expect(page).not.toContain("other answers");
  });
});
