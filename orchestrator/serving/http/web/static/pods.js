// The list of the host's pods: filtered by the box, sorted by the column clicked, each state
// coloured by its public status as the TUI colours it (states.js and status.css come from
// the server's own tables).

import { api, chartUrl, podPath } from "./api.js";
import { byId, clear, dollars, el, relativeTime, shortPath } from "./dom.js";
import { STATUS_OF } from "./states.js";

const REFRESH_MS = 5000;

export function statusOf(state) {
  return STATUS_OF[state] || "unloaded";
}

export class PodList {
  constructor(onError) {
    this.rows = [];
    this.sortKey = "name";
    this.ascending = true;
    this.timer = null;
    this.onError = onError;
    this.filter = byId("filter");
    this.filter.addEventListener("input", () => this.render());
    for (const th of document.querySelectorAll("#pods th")) {
      th.querySelector("button").addEventListener("click", () => this.sortBy(th.dataset.key));
    }
  }

  start() {
    this.stop();
    this.refresh();
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async refresh() {
    try {
      const listing = await api("/v1/pods");
      this.rows = listing.pods || [];
      this.showHost(listing.host);
      this.render();
      byId("memory-chart").src = chartUrl("/v1/host/charts/memory.svg");
    } catch (error) {
      this.onError(error);
    }
  }

  showHost(host) {
    const summary = byId("host-summary");
    if (!host) {
      summary.textContent = "";
      return;
    }
    const memory = host.rss_bytes ? ` · ${(host.rss_bytes / 1e6).toFixed(0)} MB` : "";
    summary.textContent = `${host.loaded} of ${host.registered} loaded${memory}`;
  }

  sortBy(key) {
    if (this.sortKey === key) this.ascending = !this.ascending;
    else {
      this.sortKey = key;
      this.ascending = key !== "last_active_ms" && key !== "cost";
    }
    for (const th of document.querySelectorAll("#pods th")) {
      th.setAttribute("aria-sort", th.dataset.key === this.sortKey ? (this.ascending ? "ascending" : "descending") : "none");
    }
    this.render();
  }

  value(row, key) {
    if (key === "cost") return row.cost_usd ?? -1;
    if (key === "state") return `${statusOf(row.state)} ${row.state}`;
    return row[key] ?? "";
  }

  visible() {
    const words = this.filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const rows = this.rows.filter((row) => {
      const haystack = `${row.name} ${row.workspace} ${row.state} ${statusOf(row.state)}`.toLowerCase();
      return words.every((word) => haystack.includes(word));
    });
    const direction = this.ascending ? 1 : -1;
    rows.sort((a, b) => {
      const x = this.value(a, this.sortKey);
      const y = this.value(b, this.sortKey);
      if (typeof x === "number" && typeof y === "number") return (x - y) * direction;
      return String(x).localeCompare(String(y)) * direction;
    });
    return rows;
  }

  render() {
    const rows = this.visible();
    // Drawn again only when what it shows changed: a redraw every refresh would flicker and
    // take away what the pointer is on.
    const shown = JSON.stringify(rows.map((row) => [row.name, row.workspace, row.state, relativeTime(row.last_active_ms), row.cost_usd]));
    if (shown === this.shown) return;
    this.shown = shown;
    const body = byId("pod-rows");
    clear(body);
    for (const row of rows) {
      const status = statusOf(row.state);
      const link = el("a", { text: row.name, attrs: { href: `#/pod/${encodeURIComponent(row.name)}` } });
      body.append(
        el(
          "tr",
          { class: "pod-row", attrs: { "data-name": row.name, "data-status": status } },
          el("td", { class: "name", attrs: { "data-label": "Name" } }, link),
          el("td", { class: "workspace", text: shortPath(row.workspace), attrs: { "data-label": "Workspace", title: row.workspace } }),
          el("td", { attrs: { "data-label": "State" } }, el("span", { class: `state st-${status}`, text: row.state.replaceAll("_", " ") })),
          el("td", { text: relativeTime(row.last_active_ms), attrs: { "data-label": "Last activity" } }),
          el("td", { class: "cost", text: dollars(row.cost_usd), attrs: { "data-label": "Cost" } }),
        ),
      );
    }
    byId("pods-empty").hidden = rows.length > 0;
  }
}
