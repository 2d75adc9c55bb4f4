// The chat page of the browser test (test/chat/use-chat.slow.test.ts): the
// AI SDK's real `useChat` from @ai-sdk/react, set up as README's "Chat UIs"
// section prints it, against the routes of server.ts. The page loads the
// chat's history first (README: `useChat({ id, messages: await
// support.conversation(id).messages() })`, here over a route of the
// server), then renders what `useChat` holds: text, reasoning, tool parts
// with Approve and Deny, a form for a typed wait (a `data-wait` part,
// answered with `addToolOutput`), attachments, and the buttons a chat has (Send,
// Stop, Regenerate). Elements carry ids and data attributes for the test
// to read; nothing here decides what the chat does.

import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from "ai";
import { useEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import type { ChatPageProbe, ShownMessage } from "./page-snapshot.js";

const chatId = new URLSearchParams(location.search).get("chat") ?? "chat-1";

/** Loads the history, then shows the chat. */
function Page() {
  const [history, setHistory] = useState<UIMessage[] | undefined>(undefined);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  useEffect(() => {
    fetch(`/api/chat/${encodeURIComponent(chatId)}/messages`)
      .then((response) => (response.ok ? (response.json() as Promise<UIMessage[]>) : Promise.reject(new Error(`history: ${response.status}`))))
      .then(setHistory, (error: unknown) => setFailure(String(error)));
  }, []);
  if (failure !== undefined) return <p id="error">{failure}</p>;
  if (history === undefined) return <p id="loading">Loading…</p>;
  return <Chat id={chatId} history={history} />;
}

function Chat({ id, history }: { id: string; history: UIMessage[] }) {
  // As README prints it, plus the history loaded above.
  const { messages, sendMessage, addToolApprovalResponse, addToolOutput, regenerate, stop, status, error } = useChat({
    id,
    resume: true,
    transport: new DefaultChatTransport({ api: "/api/chat" }),
    // An approval decided, or a typed wait answered (addToolOutput): sent at once.
    sendAutomaticallyWhen: (options) => lastAssistantMessageIsCompleteWithApprovalResponses(options) || lastAssistantMessageIsCompleteWithToolCalls(options),
    messages: history,
  });
  const text = useRef<HTMLInputElement>(null);
  const files = useRef<HTMLInputElement>(null);

  const send = (): void => {
    const attached = files.current?.files;
    void sendMessage({ text: text.current?.value ?? "", ...(attached && attached.length > 0 ? { files: attached } : {}) });
    if (text.current) text.current.value = "";
    if (files.current) files.current.value = "";
  };
  // useChat's stop() only aborts its fetch; the server is told by its own route (README).
  const stopAnswer = async (): Promise<void> => {
    await stop();
    await fetch(`/api/chat/${encodeURIComponent(id)}/stop`, { method: "POST" });
  };

  return (
    <>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className="message" data-role={message.role} data-id={message.id}>
            {message.parts.map((part, index) => {
              const key = `${message.id}-${index}`;
              if (part.type === "text")
                return (
                  <p key={key} className="text">
                    {part.text}
                  </p>
                );
              if (part.type === "reasoning")
                return (
                  <p key={key} className="reasoning">
                    {part.text}
                  </p>
                );
              if (part.type === "file") return <p key={key} className="file">{`${part.filename ?? "file"} (${part.mediaType})`}</p>;
              if (part.type === "data-wait") {
                const wait = part.data as { toolCallId: string };
                const call = message.parts.find((candidate) => isToolUIPart(candidate) && candidate.toolCallId === wait.toolCallId);
                // Shown until answered, and again when the answer was refused (the error).
                const open = call !== undefined && isToolUIPart(call) && (call.state === "input-available" || error !== undefined);
                return open && call !== undefined && isToolUIPart(call) ? (
                  <WaitForm
                    key={key}
                    answer={(value) => void addToolOutput({ tool: call.type.slice("tool-".length), toolCallId: wait.toolCallId, output: { date: value } })}
                  />
                ) : null;
              }
              if (!isToolUIPart(part)) return null;
              return (
                <div key={key} className="tool" data-tool={part.type} data-state={part.state}>
                  <code className="input">{JSON.stringify(part.input)}</code>
                  {part.state === "output-available" ? <code className="output">{JSON.stringify(part.output)}</code> : null}
                  {part.state === "approval-requested" ? (
                    <>
                      <button type="button" className="approve" onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: true })}>
                        Approve
                      </button>
                      <button
                        type="button"
                        className="deny"
                        onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "the customer changed their mind" })}
                      >
                        Deny
                      </button>
                    </>
                  ) : null}
                </div>
              );
            })}
          </li>
        ))}
      </ol>
      <p id="status">{status}</p>
      {error ? <p id="error">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          send();
        }}
      >
        <input id="text" ref={text} />
        <input id="files" type="file" multiple ref={files} />
        <button id="send" type="submit">
          Send
        </button>
        <button id="stop" type="button" onClick={() => void stopAnswer()}>
          Stop
        </button>
        <button id="regenerate" type="button" onClick={() => void regenerate()}>
          Regenerate
        </button>
      </form>
    </>
  );
}

/** A typed wait's form: one field (the schema asks for `date`). */
function WaitForm({ answer }: { answer: (value: string) => void }) {
  const field = useRef<HTMLInputElement>(null);
  return (
    <form
      className="wait"
      onSubmit={(event) => {
        event.preventDefault();
        answer(field.current?.value ?? "");
      }}
    >
      <input className="wait-value" ref={field} />
      <button type="submit" className="wait-answer">
        Answer
      </button>
    </form>
  );
}

// -- what the test reads ------------------------------------------------------------

function shownMessage(element: Element): ShownMessage {
  const texts = (selector: string) => [...element.querySelectorAll(selector)].map((node) => node.textContent ?? "");
  return {
    role: element.getAttribute("data-role") ?? "",
    id: element.getAttribute("data-id") ?? "",
    text: texts(".text").join(""),
    reasoning: texts(".reasoning").join(""),
    files: texts(".file"),
    tools: [...element.querySelectorAll(".tool")].map((tool) => ({
      tool: tool.getAttribute("data-tool") ?? "",
      state: tool.getAttribute("data-state") ?? "",
      output: tool.querySelector(".output")?.textContent ?? undefined,
    })),
  };
}

const recorded: string[] = [];
const probe: ChatPageProbe = {
  snapshot: () => ({
    messages: [...document.querySelectorAll("#messages > li")].map(shownMessage),
    status: document.getElementById("status")?.textContent ?? undefined,
    error: document.getElementById("error")?.textContent ?? undefined,
  }),
  recordAnswer() {
    const record = (): void => {
      const answers = [...document.querySelectorAll('#messages > li[data-role="assistant"]')];
      const text = answers.length === 0 ? "" : shownMessage(answers[answers.length - 1]!).text;
      if (recorded[recorded.length - 1] !== text) recorded.push(text);
    };
    record();
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
  },
  recordedAnswers: () => [...recorded],
};
(globalThis as unknown as { chatPage: ChatPageProbe }).chatPage = probe;

createRoot(document.getElementById("root")!).render(<Page />);
