// What a pod waits for a person to answer: approvals of tool calls and requests for input
// (an MCP server's form), each a small form posting to the API's approval and elicitation
// routes. The texts are the model's, a tool's or a server's: shown with textContent only.

import { api, podPath } from "./api.js";
import { el, pretty } from "./dom.js";

function field(name, schema, required) {
  const label = schema.title || name;
  const id = `field-${name}`;
  let input;
  if (Array.isArray(schema.enum)) {
    input = el("select", { attrs: { id, name } }, ...schema.enum.map((value) => el("option", { text: value, attrs: { value } })));
  } else if (schema.type === "boolean") {
    input = el("input", { attrs: { id, name, type: "checkbox" } });
    input.checked = Boolean(schema.default);
  } else {
    const type = schema.type === "number" || schema.type === "integer" ? "number" : "text";
    input = el("input", { attrs: { id, name, type, required: required || undefined } });
    if (schema.default !== undefined) input.value = String(schema.default);
  }
  return el("label", { class: "field", attrs: { for: id } }, el("span", { text: label + (required ? " *" : "") }), input, schema.description ? el("small", { class: "muted", text: schema.description }) : null);
}

function formContent(form, schema) {
  const content = {};
  for (const [name, property] of Object.entries(schema.properties || {})) {
    const input = form.elements.namedItem(name);
    if (!input) continue;
    if (property.type === "boolean") content[name] = input.checked;
    else if (input.value === "") continue;
    else if (property.type === "number") content[name] = Number(input.value);
    else if (property.type === "integer") content[name] = Math.trunc(Number(input.value));
    else content[name] = input.value;
  }
  return content;
}

export class Waiting {
  constructor(root, pod, onError) {
    this.root = root;
    this.pod = pod;
    this.onError = onError;
    this.cards = new Map();
  }

  reset(pod) {
    this.pod = pod;
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
  }

  async post(path, body, card) {
    for (const button of card.querySelectorAll("button")) button.disabled = true;
    try {
      await api(podPath(this.pod, path), { method: "POST", body });
    } catch (error) {
      for (const button of card.querySelectorAll("button")) button.disabled = false;
      this.onError(error);
    }
  }

  approval(data) {
    if (this.cards.has(data.id)) return;
    const message = el("input", { attrs: { type: "text", placeholder: "Why not (optional)", "aria-label": "Reason to deny" } });
    const approve = el("button", { class: "approve", text: "Approve", attrs: { type: "button" } });
    const session = el("button", { text: "Approve for the session", attrs: { type: "button" } });
    const deny = el("button", { class: "danger", text: "Deny", attrs: { type: "button" } });
    const card = el(
      "form",
      { class: "waiting approval", attrs: { "data-id": data.id } },
      el("h3", { text: `Approve ${data.tool}?` }),
      data.summary ? el("p", { class: "summary", text: data.summary }) : null,
      data.reason ? el("p", { class: "muted", text: data.reason }) : null,
      data.diff ? el("pre", { class: "diff", text: data.diff }) : el("pre", { class: "args", text: pretty(data.arguments) }),
      el("div", { class: "buttons" }, approve, session, message, deny),
    );
    card.addEventListener("submit", (event) => event.preventDefault());
    approve.addEventListener("click", () => this.post(`/approvals/${encodeURIComponent(data.id)}`, { decision: "approve", scope: "once" }, card));
    session.addEventListener("click", () => this.post(`/approvals/${encodeURIComponent(data.id)}`, { decision: "approve", scope: "session" }, card));
    deny.addEventListener("click", () => this.post(`/approvals/${encodeURIComponent(data.id)}`, { decision: "deny", message: message.value }, card));
    this.add(data.id, card);
  }

  elicitation(data) {
    if (this.cards.has(data.id)) return;
    const schema = data.schema || { properties: {} };
    const required = new Set(schema.required || []);
    const fields = data.mode === "form" ? Object.entries(schema.properties || {}).map(([name, property]) => field(name, property, required.has(name))) : [];
    const accept = el("button", { class: "approve", text: data.mode === "url" ? "Done" : "Send", attrs: { type: "submit" } });
    const decline = el("button", { text: "Decline", attrs: { type: "button" } });
    const cancel = el("button", { class: "danger", text: "Cancel", attrs: { type: "button" } });
    const card = el(
      "form",
      { class: "waiting elicitation", attrs: { "data-id": data.id } },
      el("h3", { text: `${data.server} asks` }),
      el("p", { text: data.message }),
      data.url ? el("p", {}, el("span", { class: "muted", text: "Open: " }), el("code", { text: data.url })) : null,
      ...fields,
      el("div", { class: "buttons" }, accept, decline, cancel),
    );
    const path = `/elicitations/${encodeURIComponent(data.id)}`;
    card.addEventListener("submit", (event) => {
      event.preventDefault();
      const body = { action: "accept" };
      if (data.mode === "form") body.content = formContent(card, schema);
      this.post(path, body, card);
    });
    decline.addEventListener("click", () => this.post(path, { action: "decline" }, card));
    cancel.addEventListener("click", () => this.post(path, { action: "cancel" }, card));
    this.add(data.id, card);
  }

  add(id, card) {
    this.cards.set(id, card);
    this.root.append(card);
    if (card.scrollIntoView) card.scrollIntoView({ block: "end" });
  }

  resolved(id) {
    const card = this.cards.get(id);
    if (card) card.remove();
    this.cards.delete(id);
  }
}
