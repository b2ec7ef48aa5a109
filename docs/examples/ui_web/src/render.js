// Shared DOM helpers of the example pages. Everything is built with textContent (never innerHTML),
// so streamed text and tool values can never inject markup.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

export function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

export function toolCard({ toolCallId, toolName, state, input, output, errorText, approvalId, onDecide }) {
  const card = el(
    "div",
    { class: "tool", "data-tool-call-id": toolCallId, "data-tool-name": toolName, "data-state": state },
    el("div", { class: "tool-name" }, `tool: ${toolName}`),
    el("pre", { class: "tool-input" }, json(input ?? {})),
  );
  if (output !== undefined) card.append(el("pre", { class: "tool-output" }, json(output)));
  if (errorText) card.append(el("pre", { class: "tool-error" }, errorText));
  if (state === "output-denied") card.append(el("div", { class: "tool-denied" }, "denied"));
  if (approvalId && onDecide) {
    const approve = el("button", { class: "approve", "data-approval-id": approvalId }, "Approve");
    const deny = el("button", { class: "deny", "data-approval-id": approvalId }, "Deny");
    approve.addEventListener("click", () => onDecide(approvalId, true));
    deny.addEventListener("click", () => onDecide(approvalId, false));
    card.append(el("div", { class: "approval" }, `Allow ${toolName}? `, approve, " ", deny));
  }
  return card;
}

export function setStatus(status, error) {
  const node = document.getElementById("status");
  node.dataset.status = status;
  node.textContent = status;
  const errorNode = document.getElementById("error");
  errorNode.textContent = error ? String(error.message ?? error) : "";
}
