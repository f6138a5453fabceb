// One pod: its status, its conversation (the transcript, then the live events over SSE),
// what it waits for, the prompt box, Pause / Resume / Cancel, its todo list and its charts.

import { api, chartUrl, podPath } from "./api.js";
import { Conversation } from "./conversation.js";
import { byId, clear, dollars, el } from "./dom.js";
import { Waiting } from "./forms.js";
import { statusOf } from "./pods.js";

const TRANSCRIPT_PAGE = 500;
const STRIP_REFRESH_MS = 5000;
const STREAMED = [
  "status", "user_message", "turn_start", "text_delta", "text_done", "thinking_delta",
  "tool_call_start", "tool_call_args_delta", "tool_call_done", "tool_output_delta",
  "tool_result", "system_note", "compaction", "rewound", "approval_request",
  "approval_resolved", "elicitation_request", "elicitation_resolved", "usage", "turn_end",
  "run_end", "error", "alert", "todos", "resync", "shutdown",
];

export class PodView {
  constructor(say) {
    this.say = say;
    this.name = null;
    this.source = null;
    this.status = null;
    this.stripTimer = null;
    this.conversation = new Conversation(byId("conversation"), { onRewind: (seq) => this.rewind(seq) });
    this.waiting = new Waiting(byId("waiting"), null, (error) => this.say(error));
    byId("pause").addEventListener("click", () => this.command("pause"));
    byId("resume").addEventListener("click", () => this.command("resume"));
    byId("cancel").addEventListener("click", () => this.command("cancel"));
    const form = byId("prompt");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    byId("prompt-text").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.send();
      }
    });
  }

  async open(name) {
    this.close();
    this.name = name;
    byId("pod-name").textContent = name;
    this.waiting.reset(name);
    this.conversation.reset();
    this.showTodos([]);
    this.say("");
    this.refreshStrip();
    this.stripTimer = setInterval(() => this.refreshStrip(), STRIP_REFRESH_MS);
    // Listen first, keep what arrives while the transcript loads, and let the committed
    // items win over an event that repeats one of them (by seq).
    const held = [];
    let loaded = false;
    this.source = new EventSource(podPath(name, "/events"));
    for (const event of STREAMED) {
      this.source.addEventListener(event, (message) => {
        let data = {};
        try {
          data = JSON.parse(message.data);
        } catch {
          return;
        }
        if (loaded) this.event(event, data);
        else held.push([event, data]);
      });
    }
    this.source.addEventListener("open", () => byId("connection").textContent = "live");
    this.source.addEventListener("error", () => byId("connection").textContent = "reconnecting…");
    try {
      await this.reload();
    } catch (error) {
      this.say(error);
    }
    loaded = true;
    for (const [event, data] of held) this.event(event, data);
    this.refreshCharts();
  }

  close() {
    if (this.stripTimer) clearInterval(this.stripTimer);
    this.stripTimer = null;
    if (this.source) this.source.close();
    this.source = null;
    this.name = null;
    byId("connection").textContent = "";
  }

  async reload() {
    const name = this.name;
    const status = await api(podPath(name));
    const first = await api(podPath(name, `/transcript?offset=0&limit=1`));
    const offset = Math.max(0, first.total - TRANSCRIPT_PAGE);
    const page = await api(podPath(name, `/transcript?offset=${offset}&limit=${TRANSCRIPT_PAGE}`));
    if (name !== this.name) return;
    this.conversation.load(page.items || []);
    this.showStatus(status);
    for (const approval of status.approvals || []) this.waiting.approval(approval);
    for (const request of status.elicitations || []) this.waiting.elicitation(request);
    this.showTodos(status.todos || []);
  }

  event(name, data) {
    switch (name) {
      case "status":
        this.showStatus(data);
        break;
      case "approval_request":
        this.waiting.approval(data);
        break;
      case "elicitation_request":
        this.waiting.elicitation(data);
        break;
      case "approval_resolved":
      case "elicitation_resolved":
        this.waiting.resolved(data.id);
        break;
      case "todos":
        this.showTodos(data.todos || []);
        break;
      case "alert":
        this.conversation.alert(data.level, data.source, data.message);
        break;
      case "error":
        this.conversation.alert("error", data.code, data.message);
        break;
      case "rewound":
      case "resync":
        this.reload().catch((error) => this.say(error));
        break;
      case "run_end":
      case "turn_end":
        this.conversation.event(name, data);
        this.refreshCharts();
        break;
      case "shutdown":
        this.say("The pod shut down.");
        break;
      default:
        this.conversation.event(name, data);
    }
  }

  showStatus(status) {
    this.status = status;
    const state = byId("pod-state");
    const publicStatus = status.status || statusOf(status.state);
    state.className = `state st-${publicStatus}`;
    state.textContent = status.state ? status.state.replaceAll("_", " ") : publicStatus;
    state.dataset.status = publicStatus;
    const cost = status.cost_usd ?? (status.budget ? status.budget.spent_usd : null);
    const reason = status.pause_reason ? ` · paused by ${status.pause_reason}` : "";
    byId("pod-meta").textContent = `${status.model || ""} · turn ${status.turn ?? 0} · ${dollars(cost)}${reason}`;
    byId("pause").disabled = publicStatus !== "running";
    byId("cancel").disabled = publicStatus !== "running" && publicStatus !== "paused";
    byId("resume").disabled = publicStatus !== "paused";
    for (const button of document.querySelectorAll("#conversation .rewind")) {
      button.hidden = publicStatus !== "idle" && publicStatus !== "paused";
    }
  }

  async refreshStrip() {
    // The other pods of the host, one chip each in its state's colour: a click away.
    let listing;
    try {
      listing = await api("/v1/pods");
    } catch {
      return;
    }
    const strip = byId("pod-strip");
    clear(strip);
    for (const row of listing.pods || []) {
      const status = statusOf(row.state);
      const chip = el(
        "a",
        { class: `chip st-${status}`, attrs: { href: `#/pod/${encodeURIComponent(row.name)}`, "aria-current": row.name === this.name ? "page" : null, title: `${row.state} · ${row.workspace}` } },
        el("span", { class: "dot" }),
        el("span", { text: row.name }),
      );
      strip.append(chip);
    }
  }

  showTodos(todos) {
    const list = byId("todos");
    clear(list);
    byId("todos-box").hidden = todos.length === 0;
    for (const todo of todos) {
      const mark = { completed: "✔", in_progress: "▸", pending: "○" }[todo.status] || "○";
      const text = todo.status === "in_progress" && todo.active_form ? todo.active_form : todo.content;
      list.append(el("li", { class: `todo ${todo.status}` }, el("span", { class: "mark", text: mark }), el("span", { text })));
    }
  }

  refreshCharts() {
    if (!this.name) return;
    byId("usage-chart").src = chartUrl(podPath(this.name, "/charts/usage.svg"));
    byId("states-chart").src = chartUrl(podPath(this.name, "/charts/states.svg"));
  }

  async command(method) {
    try {
      await api(podPath(this.name, `/${method}`), { method: "POST", body: {} });
      this.say("");
    } catch (error) {
      this.say(error);
    }
  }

  async send() {
    const box = byId("prompt-text");
    const text = box.value.trim();
    if (!text || !this.name) return;
    byId("send").disabled = true;
    try {
      await api(podPath(this.name, "/runs"), { method: "POST", body: { input: text } });
      box.value = "";
      this.say("");
    } catch (error) {
      this.say(error);
    } finally {
      byId("send").disabled = false;
    }
  }

  async rewind(seq) {
    if (!window.confirm("Rewind the conversation and the files to before this prompt?")) return;
    try {
      await api(podPath(this.name, "/rewind"), { method: "POST", body: { to: seq } });
    } catch (error) {
      this.say(error);
    }
  }
}
