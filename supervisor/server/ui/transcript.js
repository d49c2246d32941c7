// One session's transcript: the event frames of its log, applied once each, in seq order.
//
// `offer(frame)` applies an event whose seq is exactly the next one and returns "applied";
// an older seq (seen already: a replay after a reconnect) is "duplicate" and a newer one
// "gap" (the caller resubscribes from `lastSeq + 1`). So nothing is shown twice and nothing is
// skipped, whatever the connection did. Text goes in with textContent only, never as HTML.

import { el, json, permissionCard, renderDiff } from "./dom.js";

export class Transcript {
  constructor(list, permissions) {
    this.list = list;
    this.permissionsBox = permissions;
    this.reset(null);
  }

  reset(sessionId) {
    this.sessionId = sessionId;
    this.lastSeq = 0;
    this.applied = [];
    this.stream = null; // the assistant or thought block deltas go to
    this.tools = new Map();
    this.open = new Map(); // permission_id -> its card, while undecided
    this.state = null;
    this.list.replaceChildren();
    this.permissionsBox.replaceChildren();
  }

  offer(frame) {
    if (frame.seq <= this.lastSeq) return "duplicate";
    if (frame.seq !== this.lastSeq + 1) return "gap";
    this.lastSeq = frame.seq;
    this.applied.push(frame.seq);
    this.apply(frame.event, frame);
    return "applied";
  }

  /** The oldest permission request still open, or null. */
  oldestPermission() {
    const first = this.open.values().next();
    return first.done ? null : first.value;
  }

  apply(event, frame) {
    switch (event.type) {
      case "assistant":
      case "thought":
        return this.text(event, frame);
      case "tool":
        return this.tool(event, frame);
      case "permission":
        return this.permission(event, frame);
      case "permission_decided":
        return this.decided(event, frame);
      case "status":
        this.state = event.state;
        return;
      case "usage":
      case "limits":
        return;
      default:
        this.stream = null;
        return this.line(event, frame);
    }
  }

  text(event, frame) {
    const kind = event.type;
    if (event.delta) {
      if (this.stream === null || this.stream.kind !== kind) {
        this.stream = { kind, body: null, text: "" };
        this.stream.body = this.block(kind, frame);
      }
      this.stream.text += event.text;
      this.stream.body.textContent = this.stream.text;
      return;
    }
    // A whole message that repeats the deltas just streamed is the harness's consolidated copy.
    if (this.stream !== null && this.stream.kind === kind && this.stream.text === event.text) {
      this.stream = null;
      return;
    }
    this.stream = null;
    this.block(kind, frame).textContent = event.text;
  }

  block(kind, frame) {
    const item = el("li", { class: `entry ${kind}`, "data-seq": frame.seq });
    let body;
    if (kind === "thought") {
      body = el("div", { class: "body" });
      item.append(el("details", {}, el("summary", {}, "Thought"), body));
    } else {
      body = el("div", { class: "body" });
      item.append(body);
    }
    this.list.append(item);
    return body;
  }

  tool(event, frame) {
    this.stream = null;
    let entry = this.tools.get(event.call_id);
    if (entry === undefined) {
      const summary = el("summary", {});
      const body = el("div", { class: "body" });
      const details = el("details", { class: "tool" }, summary, body);
      const item = el("li", { class: "entry tool", "data-seq": frame.seq }, details);
      this.list.append(item);
      entry = { item, summary, body };
      this.tools.set(event.call_id, entry);
    }
    const failed = event.is_error ? " · failed" : "";
    entry.summary.textContent = `${event.kind} · ${event.name} · ${event.phase}${failed}`;
    entry.item.classList.toggle("failed", Boolean(event.is_error));
    const parts = [];
    if (event.input !== undefined && event.input !== null) {
      parts.push(el("h4", {}, "Input"));
      parts.push(event.kind === "edit" ? renderDiff(event.input) : el("pre", {}, json(event.input)));
    }
    if (event.output !== undefined && event.output !== null && event.output !== "") {
      parts.push(el("h4", {}, "Output"), el("pre", {}, json(event.output)));
    }
    entry.body.replaceChildren(...parts);
  }

  permission(event, frame) {
    this.stream = null;
    const card = permissionCard(event);
    card.dataset.seq = frame.seq;
    this.open.set(event.permission_id, card);
    this.permissionsBox.append(card);
    this.list.append(el("li", { class: "entry system", "data-seq": frame.seq },
      `permission asked: ${event.tool} (${event.kind})`));
  }

  decided(event, frame) {
    const card = this.open.get(event.permission_id);
    if (card !== undefined) {
      card.remove();
      this.open.delete(event.permission_id);
    }
    this.list.append(el("li", { class: "entry system", "data-seq": frame.seq },
      `permission ${event.permission_id}: ${event.decision} (by ${event.by_name || event.by})`));
  }

  line(event, frame) {
    const item = el("li", { class: `entry ${event.type}`, "data-seq": frame.seq });
    switch (event.type) {
      case "user":
        item.append(el("div", { class: "who" }, `You · ${event.delivery}`), el("div", { class: "body" }, event.text));
        break;
      case "result": {
        const usage = event.usage || {};
        const cost = event.cost_usd === null || event.cost_usd === undefined ? "" : ` · $${event.cost_usd.toFixed(4)}`;
        item.textContent = `${event.is_error ? "turn failed" : "turn done"} (${event.stop_reason}) · ` +
          `${usage.input_tokens || 0} in / ${usage.output_tokens || 0} out tokens` +
          ` · cache ${usage.cache_read_tokens || 0}/${usage.cache_write_tokens || 0}${cost} · ${event.duration_ms} ms`;
        break;
      }
      case "error":
        item.textContent = `error ${event.class}/${event.code}: ${event.message}`;
        break;
      case "init":
        item.textContent = `started · model ${event.model || "default"} · ${event.cwd}`;
        break;
      case "restarted":
        item.textContent = `restarted (attempt ${event.attempt}): ${event.reason}`;
        break;
      case "exit":
        item.textContent = `exit: ${event.reason}` +
          (event.exit_code !== null && event.exit_code !== undefined ? ` (code ${event.exit_code})` : "") +
          (event.signal ? ` (${event.signal})` : "");
        break;
      case "workspace":
        item.textContent = `worktree ${event.state}: ${event.branch} · ${event.changed_files} changed files`;
        break;
      case "permissions":
        item.textContent = `permission mode ${event.mode}`;
        break;
      case "sandbox":
        item.textContent = `sandbox ${event.decision}` +
          (event.count > 1 ? ` ×${event.count} more` : "") +
          `: ${event.kind} to ${event.host}:${event.port} (not in allow_hosts)`;
        break;
      default:
        item.textContent = `${event.type}: ${json(event)}`;
    }
    this.list.append(item);
  }
}
