// The AI SDK page: the framework-free `AbstractChat` of the `ai` package with a small DOM-backed state,
// talking to ferrule.ui.vercel.app at /api/chat.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";
import { el, setStatus, toolCard } from "./render.js";

class DomState {
  constructor(onChange) {
    this.onChange = onChange;
    this._messages = [];
    this._status = "ready";
    this._error = undefined;
  }
  get status() { return this._status; }
  set status(value) { this._status = value; this.onChange(); }
  get error() { return this._error; }
  set error(value) { this._error = value; this.onChange(); }
  get messages() { return this._messages; }
  set messages(value) { this._messages = [...value]; this.onChange(); }
  pushMessage(message) { this._messages = [...this._messages, message]; this.onChange(); }
  popMessage() { this._messages = this._messages.slice(0, -1); this.onChange(); }
  replaceMessage(index, message) {
    this._messages = this._messages.map((m, i) => (i === index ? message : m));
    this.onChange();
  }
  snapshot(value) { return structuredClone(value); }
}

// The chat id survives a reload, so the page can reconnect to a run in flight.
let chatId = sessionStorage.getItem("ferrule-chat-id");
if (!chatId) {
  chatId = `chat-${crypto.randomUUID()}`;
  sessionStorage.setItem("ferrule-chat-id", chatId);
}

let chat;
const state = new DomState(() => render());

function render() {
  const list = document.getElementById("messages");
  list.replaceChildren();
  for (const message of state.messages) {
    const node = el("div", { class: `message role-${message.role}`, "data-role": message.role });
    for (const part of message.parts) {
      if (part.type === "text") {
        node.append(el("p", { class: "text" }, part.text));
      } else if (part.type === "reasoning") {
        node.append(el("p", { class: "reasoning" }, part.text));
      } else if (part.type.startsWith("tool-") || part.type === "dynamic-tool") {
        const toolName = part.type === "dynamic-tool" ? part.toolName : part.type.slice(5);
        const waiting = part.state === "approval-requested";
        node.append(
          toolCard({
            toolCallId: part.toolCallId,
            toolName,
            state: part.state,
            input: part.input,
            output: part.output,
            errorText: part.errorText,
            approvalId: waiting ? part.approval.id : undefined,
            onDecide: (id, approved) => chat.addToolApprovalResponse({ id, approved }),
          }),
        );
      } else if (part.type.startsWith("data-")) {
        node.append(el("pre", { class: "data", "data-name": part.type.slice(5) }, JSON.stringify(part.data)));
      }
    }
    list.append(node);
  }
  setStatus(state.status, state.error);
}

chat = new AbstractChat({
  id: chatId,
  state,
  transport: new DefaultChatTransport({ api: "/api/chat/" }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (error) => console.error("chat error", error),
});

document.getElementById("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("prompt");
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  chat.sendMessage({ text });
});
document.getElementById("stop").addEventListener("click", () => chat.stop());
document.getElementById("new-chat").addEventListener("click", () => {
  sessionStorage.removeItem("ferrule-chat-id");
  location.reload();
});

render();
// After a reload, pick up the run still streaming for this chat (the server answers 204 if none).
chat.resumeStream();
window.ferruleChat = chat;
