// The Usage view and each session's cost so far, from `usage.summary` (docs/usage.md).
//
// The view shows the totals and three tables: by UTC day, by harness, by model. Costs read as
// dollars; the part corral estimated from its price table is said apart, and turns it could not
// price are counted, never shown as $0. Summaries are asked for when the view opens, after a
// turn ends in the open session, and when the session list shows new events (at most every
// `EVERY_MS`): a summary reads every session's usage index, too much to ask for every second.

import { el } from "./dom.js";

const EVERY_MS = 3000;
const COLUMNS = [["turns", "Turns"], ["errors", "Errors"], ["input_tokens", "Input"],
  ["output_tokens", "Output"], ["cache_read_tokens", "Cache read"], ["cache_write_tokens", "Cache write"]];
const GROUPS = [["day", "By day (UTC)"], ["harness", "By harness"], ["model", "By model"]];

/** Dollars to a hundredth of a cent. */
export function dollars(value) {
  return `$${value.toFixed(4)}`;
}

/** A cost as a short text: `$0.0123`, `(est. $0.0040)` when part of it is estimated, and the
 * unpriced turns when there are any. */
export function costText(figures) {
  let text = dollars(figures.cost_usd);
  if (figures.estimated_cost_usd > 0) text += ` (est. ${dollars(figures.estimated_cost_usd)})`;
  if (figures.unpriced_turns > 0) text += ` + ${figures.unpriced_turns} unpriced turn${figures.unpriced_turns === 1 ? "" : "s"}`;
  return text;
}

export class Usage {
  constructor(client, panel, onCosts) {
    this.client = client;
    this.panel = panel;
    this.onCosts = onCosts;
    this.costs = new Map(); // session id -> figures
    this.askedAt = 0;
    this.busy = false;
    this.again = false; // asked while busy: ask once more when done
    this.timer = null; // a throttled ask, due when `EVERY_MS` has passed
  }

  get open() {
    return !this.panel.hidden;
  }

  /** Ask again: now (``force``), else once `EVERY_MS` have passed since the last ask. No ask is
   * dropped: one made while an answer is awaited, or too soon, runs later. */
  async update(force = false) {
    if (!this.client.open) return;
    if (this.busy) { this.again = true; return; }
    const wait = this.askedAt + EVERY_MS - Date.now();
    if (!force && wait > 0) {
      this.timer ??= setTimeout(() => { this.timer = null; this.update(); }, wait);
      return;
    }
    this.busy = true;
    this.askedAt = Date.now();
    try {
      const bySession = await this.client.request("usage.summary", { by: "session" });
      this.costs = new Map(bySession.groups.map((g) => [g.key, g]));
      this.onCosts();
      if (this.open) {
        const answers = await Promise.all(GROUPS.map(([by]) => this.client.request("usage.summary", { by })));
        this.render(bySession.totals, answers);
      }
    } catch (error) {
      if (error.code !== "disconnected") this.panel.replaceChildren(el("p", { class: "error" }, `${error.code}: ${error.message}`));
    } finally {
      this.busy = false;
      if (this.again) { this.again = false; this.update(true); }
    }
  }

  render(totals, answers) {
    const summary = el("p", { id: "usage-totals" },
      `${totals.turns} turns · ${totals.errors} errors · ${totals.input_tokens} input and ` +
      `${totals.output_tokens} output tokens · cost ${costText(totals)}`);
    this.panel.replaceChildren(el("h2", {}, "Usage"), summary,
      ...answers.map((answer, i) => table(GROUPS[i][0], GROUPS[i][1], answer.groups)));
  }
}

function table(by, caption, groups) {
  if (groups.length === 0) return el("p", { class: "muted", "data-usage-by": by }, `${caption}: no turns yet.`);
  const head = el("tr", {}, el("th", { scope: "col" }, by),
    ...COLUMNS.map(([, name]) => el("th", { scope: "col" }, name)),
    el("th", { scope: "col" }, "Cost"), el("th", { scope: "col" }, "Estimated"), el("th", { scope: "col" }, "Unpriced"));
  const rows = groups.map((g) => el("tr", { "data-key": g.key }, el("th", { scope: "row" }, g.key),
    ...COLUMNS.map(([field]) => el("td", {}, String(g[field]))),
    el("td", {}, dollars(g.cost_usd)), el("td", {}, dollars(g.estimated_cost_usd)), el("td", {}, String(g.unpriced_turns))));
  return el("div", { class: "usage-table" },
    el("table", { "data-usage-by": by }, el("caption", {}, caption), el("thead", {}, head), el("tbody", {}, ...rows)));
}
