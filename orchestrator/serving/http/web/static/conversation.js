// One pod's conversation: the committed items of its transcript, then its live events.
// Everything the model or a tool wrote goes in with textContent (dom.js), never as markup.

import { clear, el, pretty } from "./dom.js";

const ORIGIN_NAMES = { notify: "notification", pod_event: "pod event", preread: "file" };

function segmentsText(segments, fallback) {
  if (!Array.isArray(segments) || segments.length === 0) return fallback || "";
  return segments
    .map((segment) => {
      if (segment.kind === "text") return segment.text;
      if (segment.path) return `@${segment.path}`;
      return `[${segment.kind}]`;
    })
    .join("");
}

export class Conversation {
  constructor(root, { onRewind } = {}) {
    this.root = root;
    this.onRewind = onRewind;
    this.reset();
  }

  reset() {
    clear(this.root);
    this.seqs = new Set();
    this.tools = new Map();
    this.streaming = null; // the assistant text deltas go to now
    this.open = []; // streamed texts not yet done (a tool call may start before text_done)
    this.thinking = null; // the thinking block being streamed
  }

  scroll() {
    const last = this.root.lastElementChild;
    if (last && last.scrollIntoView) last.scrollIntoView({ block: "end" });
  }

  // -- committed items (the transcript) ----------------------------------------------------

  load(items) {
    this.reset();
    for (const item of items) this.item(item);
    this.scroll();
  }

  item(item) {
    if (item.seq) this.seqs.add(item.seq);
    switch (item.kind) {
      case "user_message":
        this.user(segmentsText(item.segments, item.text), item.seq);
        break;
      case "assistant":
        for (const block of item.blocks || []) {
          if (block.type === "text") this.text(block.text);
          else if (block.type === "thinking") this.thought(block.thinking);
          else if (block.type === "tool_use" || block.type === "server_tool_use") {
            this.toolCard(block.id, block.name).args.textContent = pretty(block.input);
          }
        }
        break;
      case "tool_result":
        this.result(item.call_id, item.summary, item.content, item.is_error);
        break;
      case "system_message":
        this.note(item.text, item.origin);
        break;
      case "compaction":
        this.note(`Compacted: ${item.tokens_before} → ${item.tokens_after} tokens`, "compaction");
        break;
      default:
        break;
    }
  }

  // -- pieces ------------------------------------------------------------------------------

  user(text, seq) {
    this.endStream();
    const li = el("li", { class: "msg user", attrs: { "data-seq": seq } }, el("div", { class: "body", text }));
    if (seq && this.onRewind) {
      const button = el("button", { class: "rewind", text: "Rewind here", attrs: { type: "button", title: "Go back to before this prompt" } });
      button.addEventListener("click", () => this.onRewind(seq));
      li.append(button);
    }
    this.root.append(li);
  }

  text(text) {
    this.endStream();
    this.root.append(el("li", { class: "msg assistant" }, el("div", { class: "body", text })));
  }

  thought(text) {
    this.endStream();
    const details = el("details", { class: "thinking" }, el("summary", { text: "Thinking" }), el("pre", { text }));
    this.root.append(el("li", { class: "msg thinking-item" }, details));
  }

  note(text, origin) {
    this.endStream();
    const label = ORIGIN_NAMES[origin] || origin || "note";
    this.root.append(el("li", { class: "note" }, el("span", { class: "tag", text: label }), el("span", { text })));
  }

  alert(level, source, message) {
    this.root.append(el("li", { class: `alert alert-${level}` }, el("span", { class: "tag", text: source }), el("span", { text: message })));
    this.scroll();
  }

  toolCard(id, name) {
    let card = this.tools.get(id);
    if (card) return card;
    this.endStream();
    const summary = el("span", { class: "summary" });
    const args = el("pre", { class: "args" });
    const output = el("pre", { class: "output", attrs: { hidden: true } });
    const details = el("details", { class: "tool-card", attrs: { open: true } }, el("summary", {}, el("span", { class: "tool-name", text: name }), summary), args, output);
    const li = el("li", { class: "msg tool", attrs: { "data-call": id } }, details);
    this.root.append(li);
    card = { li, details, summary, args, output };
    this.tools.set(id, card);
    return card;
  }

  result(id, summary, content, isError) {
    const card = this.toolCard(id, "tool");
    card.summary.textContent = summary || "";
    card.li.classList.toggle("error", Boolean(isError));
    card.li.classList.add("done");
    if (content) {
      card.output.hidden = false;
      card.output.textContent = content;
    }
    // Open where there is something short to read (or it failed); a long output folds.
    card.details.open = Boolean(isError) || (content || "").length <= 600;
  }

  endStream() {
    this.streaming = null;
    this.thinking = null;
  }

  settle() {
    // The run ended: a text cut short (a pause, a cancel) is done as it stands.
    for (const body of this.open) body.parentElement.classList.remove("streaming");
    this.open = [];
    this.endStream();
  }

  // -- live events -------------------------------------------------------------------------

  event(name, data) {
    if (data && data.seq && this.seqs.has(data.seq) && name !== "tool_call_done") return;
    if (data && data.seq) this.seqs.add(data.seq);
    switch (name) {
      case "user_message":
        this.user(segmentsText(data.segments, ""), data.seq);
        break;
      case "text_delta": {
        if (!this.streaming) {
          this.thinking = null;
          const body = el("div", { class: "body" });
          this.root.append(el("li", { class: "msg assistant streaming" }, body));
          this.streaming = body;
          this.open.push(body);
        }
        this.streaming.textContent += data.text;
        break;
      }
      case "text_done": {
        const body = this.open.shift();
        if (body) {
          body.textContent = data.text;
          body.parentElement.classList.remove("streaming");
          if (body === this.streaming) this.streaming = null;
        } else this.text(data.text);
        break;
      }
      case "thinking_delta":
        if (!this.thinking) {
          this.streaming = null;
          const pre = el("pre");
          const details = el("details", { class: "thinking" }, el("summary", { text: "Thinking" }), pre);
          this.root.append(el("li", { class: "msg thinking-item" }, details));
          this.thinking = pre;
        }
        this.thinking.textContent += data.text;
        break;
      case "tool_call_start":
        this.toolCard(data.id, data.name);
        break;
      case "tool_call_args_delta":
        this.toolCard(data.id, "tool").args.textContent += data.json;
        break;
      case "tool_call_done":
        this.toolCard(data.id, data.name).args.textContent = pretty(data.arguments);
        break;
      case "tool_output_delta": {
        const card = this.toolCard(data.id, "tool");
        card.output.hidden = false;
        card.output.textContent += data.text;
        break;
      }
      case "tool_result":
        this.result(data.id, data.summary, data.content, data.is_error);
        break;
      case "system_note":
        this.note(data.text, data.origin);
        break;
      case "compaction":
        this.note("The conversation was compacted", "compaction");
        break;
      case "run_end":
        this.settle();
        if (data.result && data.result !== "finished") this.note(`Run ${data.result}`, "run");
        break;
      default:
        return;
    }
    this.scroll();
  }
}
