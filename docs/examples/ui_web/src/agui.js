// The AG-UI page: @ag-ui/client's HttpAgent talking to ferrule.ui.ag_ui.app at /api/agui.
import { HttpAgent } from "@ag-ui/client";
import { el, setStatus, toolCard } from "./render.js";

const agent = new HttpAgent({ url: "/api/agui/", threadId: `thread-${crypto.randomUUID()}` });
const results = new Map(); // toolCallId -> { content, outcome }
let status = "ready";
let error;

function render() {
  const list = document.getElementById("messages");
  list.replaceChildren();
  const interrupts = new Map(agent.pendingInterrupts.map((i) => [i.toolCallId, i]));
  for (const message of agent.messages) {
    if (message.role === "tool") continue; // shown on the call it answers
    const node = el("div", { class: `message role-${message.role}`, "data-role": message.role });
    if (typeof message.content === "string" && message.content) {
      node.append(el("p", { class: message.role === "reasoning" ? "reasoning" : "text" }, message.content));
    }
    for (const call of message.toolCalls ?? []) {
      const result = results.get(call.id);
      const interrupt = interrupts.get(call.id);
      let input = call.function.arguments;
      try { input = JSON.parse(input); } catch {}
      const outcome = result?.outcome;
      node.append(
        toolCard({
          toolCallId: call.id,
          toolName: call.function.name,
          state: interrupt ? "approval-requested" : outcome === "denied" ? "output-denied"
            : outcome === "failed" ? "output-error" : result ? "output-available" : "input-available",
          input,
          output: result && !outcome ? result.content : undefined,
          errorText: outcome === "failed" ? result.content : undefined,
          approvalId: interrupt?.id,
          onDecide: decide,
        }),
      );
    }
    list.append(node);
  }
  setStatus(status, error);
}

const subscriber = {
  onMessagesChanged: () => render(),
  onToolCallResultEvent: ({ event }) => {
    results.set(event.toolCallId, { content: event.content, outcome: event.metadata?.ferrule?.outcome });
  },
  onRunErrorEvent: ({ event }) => { error = new Error(event.message); },
};
agent.subscribe(subscriber);

async function run(parameters) {
  status = "streaming";
  error = undefined;
  render();
  try {
    await agent.runAgent(parameters);
  } catch (e) {
    error = e;
  }
  status = error ? "error" : "ready";
  render();
}

function decide(interruptId, approved) {
  const resume = agent.pendingInterrupts.map((i) =>
    i.id === interruptId ? { interruptId: i.id, status: "resolved", payload: { approved } } : null,
  ).filter(Boolean);
  run({ resume });
}

document.getElementById("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("prompt");
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  run();
});

document.getElementById("stop").addEventListener("click", () => agent.abortRun());
document.getElementById("new-chat").addEventListener("click", () => location.reload());

render();
window.ferruleAgent = agent;
