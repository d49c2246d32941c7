// The page: a session list (polled), one session's live transcript (subscribed), its prompt box,
// permission buttons and worktree diff, the create form and the daemon panel.
//
// Live and lossless: the open session is subscribed from `lastSeq + 1` whenever the connection
// opens (first load, after a drop, after a daemon restart) and after a `lagged`; the transcript
// drops what it has seen already and resubscribes on a gap (transcript.js). The selected
// session is in the URL's fragment, so a reload comes back to it. The Usage view and the cost
// of each session come from `usage.summary` (usage.js); the "Notifications" switch (notify.js)
// shows system notifications while the tab is hidden.

import { Client } from "./client.js";
import { diffLines, el } from "./dom.js";
import { Notifier } from "./notify.js";
import { Transcript } from "./transcript.js";
import { Usage, costText } from "./usage.js";

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);

const transcript = new Transcript($("transcript"), $("permissions"));
const sessions = new Map(); // id -> {info, changedAt}
let selected = null;
let diffOpen = false;
const notifier = new Notifier($("notify-toggle"), (sessionId) => select(sessionId));

const client = new Client({
  onOpen: () => {
    setLink("connected", "ok");
    refresh();
    if (selected !== null) subscribe(selected);
  },
  onClose: (why) => setLink(`disconnected (${why}); reconnecting…`, "bad"),
  onFrame: (frame) => {
    if (frame.type === "event") return onEvent(frame);
    if (frame.type === "lagged" && frame.session_id === transcript.sessionId) subscribe(frame.session_id);
  },
});

const usage = new Usage(client, $("usage"), () => { renderList(); showHeader(); });

// For the tests and the curious: what the page has applied, in order.
window.corral = { transcript, sessions, usage, notifier };

function setLink(text, kind) {
  const link = $("link");
  link.textContent = text;
  link.className = `link ${kind}`;
}

// --- the open session -----------------------------------------------------------------------

function onEvent(frame) {
  if (frame.session_id !== transcript.sessionId) return;
  const outcome = transcript.offer(frame);
  if (outcome === "gap") subscribe(frame.session_id);
  if (outcome !== "applied") return;
  const type = frame.event.type;
  const info = sessions.get(frame.session_id)?.info;
  notifier.fromEvent(frame, info?.name || frame.session_id);
  if (type === "status" || type === "exit" || type === "workspace") refresh();
  if (type === "workspace" && diffOpen) loadDiff();
  if (type === "result") usage.update(true);
  showHeader();
  scrollDown();
}

async function subscribe(sessionId) {
  try {
    await client.request("session.subscribe", { session_id: sessionId, from_seq: transcript.lastSeq + 1 });
  } catch (error) {
    if (error.code !== "disconnected") report(error);
  }
}

function select(sessionId) {
  if (selected === sessionId) return;
  if (selected !== null && client.open) client.request("session.unsubscribe", { session_id: selected }).catch(() => {});
  selected = sessionId;
  transcript.reset(sessionId);
  diffOpen = false;
  $("diff").hidden = true;
  $("diff-toggle").setAttribute("aria-expanded", "false");
  if (location.hash !== `#${sessionId}`) history.replaceState(null, "", sessionId ? `#${sessionId}` : "/");
  $("view").hidden = sessionId === null;
  $("pick").hidden = sessionId !== null;
  renderList();
  showHeader();
  if (sessionId !== null && client.open) subscribe(sessionId);
}

function showHeader() {
  const entry = sessions.get(selected);
  if (entry === undefined) return;
  const info = entry.info;
  $("view-title").textContent = info.name ? `${info.name} (${info.id})` : info.id;
  $("view-state").textContent = info.state;
  $("view-state").dataset.state = info.state;
  const ws = info.workspace;
  const cost = usage.costs.get(info.id);
  $("view-meta").textContent = [info.harness, info.model || "default model", info.cwd,
    `${info.restarts} restarts`, ws ? `branch ${ws.branch} · ${ws.changed_files} changed files` : null,
    cost ? `cost so far ${costText(cost)}` : null]
    .filter(Boolean).join(" · ");
  $("diff-toggle").hidden = !ws;
}

function scrollDown() {
  const list = $("transcript");
  list.lastElementChild?.scrollIntoView({ block: "nearest" });
}

async function loadDiff() {
  try {
    const result = await client.request("workspace.diff", { session_id: selected });
    const files = el("ul", { class: "files" }, ...result.files.map(
      (f) => el("li", {}, `${f.status} ${f.path} +${f.added} −${f.removed}`)));
    $("diff").replaceChildren(el("h3", {}, "Worktree diff"), files,
      result.diff ? diffLines(result.diff) : el("p", { class: "muted" }, "No changes."));
  } catch (error) {
    $("diff").replaceChildren(el("p", { class: "error" }, `${error.code}: ${error.message}`));
  }
}

async function decide(permissionId, decision) {
  try {
    await client.request("session.permission", { session_id: selected, permission_id: permissionId, decision });
  } catch (error) {
    if (error.code !== "already_decided") report(error);
  }
}

// --- the list and the daemon ----------------------------------------------------------------

async function refresh() {
  if (!client.open) return;
  try {
    const { sessions: infos } = await client.request("session.list");
    const seen = new Set();
    let moved = false;
    for (const info of infos) {
      seen.add(info.id);
      const old = sessions.get(info.id);
      const changedAt = old === undefined ? Date.parse(info.created_at)
        : old.info.last_seq !== info.last_seq ? Date.now() : old.changedAt;
      moved ||= old === undefined || old.info.last_seq !== info.last_seq;
      if (old !== undefined && info.id !== selected && old.info.state !== info.state) {
        notifier.fromList(old.info.state, info);
      }
      sessions.set(info.id, { info, changedAt });
    }
    for (const id of [...sessions.keys()]) if (!seen.has(id)) sessions.delete(id);
    renderList();
    showHeader();
    if (!$("daemon").hidden) renderDaemon(await client.request("daemon.status"));
    if (moved) usage.update();
  } catch (error) {
    if (error.code !== "disconnected") report(error);
  }
}

// Rows are kept and updated in place (keyed by session id), never rebuilt: a focused or
// hovered row survives the refresh, for the keyboard and the pointer alike.
const rows = new Map(); // id -> {li, name, badge, ids, cwd, activity, cost}

function renderList() {
  const items = [...sessions.values()].sort((a, b) => b.info.created_at.localeCompare(a.info.created_at));
  const list = $("session-list");
  $("no-sessions").hidden = items.length > 0;
  for (const [id, row] of rows) {
    if (!sessions.has(id)) {
      row.li.remove();
      rows.delete(id);
    }
  }
  let previous = null;
  for (const { info, changedAt } of items) {
    let row = rows.get(info.id);
    if (row === undefined) {
      row = newRow(info.id);
      rows.set(info.id, row);
    }
    const ws = info.workspace;
    setText(row.name, info.name || info.id);
    setText(row.badge, info.state);
    row.badge.dataset.state = info.state;
    setText(row.ids, `${info.id} · ${info.harness} · ${info.model || "default"}`);
    setText(row.cwd, info.cwd);
    setText(row.activity, `active ${ago(changedAt)} · ${info.restarts} restarts` +
      (ws ? ` · ${ws.branch} (${ws.changed_files} files)` : ""));
    const cost = usage.costs.get(info.id);
    setText(row.cost, cost ? `${cost.turns} turn${cost.turns === 1 ? "" : "s"} · ${costText(cost)}` : "no turns yet");
    if (info.id === selected) row.button.setAttribute("aria-current", "true");
    else row.button.removeAttribute("aria-current");
    const want = previous === null ? list.firstChild : previous.nextSibling;
    if (row.li !== want) list.insertBefore(row.li, want);
    previous = row.li;
  }
}

function newRow(sessionId) {
  const row = { name: el("span", { class: "name" }), badge: el("span", { class: "badge" }),
                ids: el("span", { class: "meta" }), cwd: el("span", { class: "meta" }),
                activity: el("span", { class: "meta" }), cost: el("span", { class: "meta cost" }) };
  row.button = el("button", { type: "button", class: "session", "data-session-id": sessionId },
    row.name, row.badge, row.ids, row.cwd, row.activity, row.cost);
  row.button.addEventListener("click", () => select(sessionId));
  row.li = el("li", {}, row.button);
  return row;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function renderDaemon(status) {
  const children = el("ul", {}, ...status.children.map((c) => el("li", {}, `${c.kind} ${c.key} · pid ${c.pid}`)));
  const supervisors = el("ul", {}, ...(status.supervisors || []).map(
    (s) => el("li", {}, `${s.name}: ${s.children} children, ${s.restarts} restarts (${s.restarts_in_period} recent)`)));
  $("daemon").replaceChildren(
    el("h2", {}, "Daemon"),
    el("p", {}, `corral ${status.version} · pid ${status.pid} · up ${Math.round(status.uptime_s)} s · ` +
      `${status.sessions} sessions · ${status.clients} clients`),
    el("h3", {}, "Child processes"), status.children.length ? children : el("p", { class: "muted" }, "none"),
    el("h3", {}, "Supervisors"), supervisors);
}

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}

function report(error) {
  setLink(`${error.code || "error"}: ${error.message}`, "bad");
}

// --- controls -------------------------------------------------------------------------------

async function send() {
  const box = $("prompt");
  const text = box.value.trim();
  if (!text || selected === null) return;
  try {
    await client.request("session.prompt", { session_id: selected, text });
    box.value = "";
  } catch (error) {
    report(error);
  }
}

$("prompt-form").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
$("interrupt").addEventListener("click", () => {
  client.request("session.interrupt", { session_id: selected }).catch(report);
});
$("close-session").addEventListener("click", () => {
  client.request("session.close", { session_id: selected }).then(refresh, report);
});
$("permissions").addEventListener("click", (e) => {
  const button = e.target.closest("button[data-decision]");
  if (button) decide(button.dataset.permissionId, button.dataset.decision);
});
$("diff-toggle").addEventListener("click", () => {
  diffOpen = !diffOpen;
  $("diff").hidden = !diffOpen;
  $("diff-toggle").setAttribute("aria-expanded", String(diffOpen));
  if (diffOpen) loadDiff();
});
$("daemon-toggle").addEventListener("click", () => {
  const panel = $("daemon");
  panel.hidden = !panel.hidden;
  $("daemon-toggle").setAttribute("aria-expanded", String(!panel.hidden));
  refresh();
});
$("usage-toggle").addEventListener("click", () => {
  const panel = $("usage");
  panel.hidden = !panel.hidden;
  $("usage-toggle").setAttribute("aria-expanded", String(!panel.hidden));
  if (!panel.hidden) usage.update(true);
});
$("new-session").addEventListener("click", async () => {
  $("create").hidden = false;
  try {
    const { harnesses } = await client.request("harness.list");
    $("create-harness").replaceChildren(...harnesses.filter((h) => h.available)
      .map((h) => el("option", { value: h.harness }, h.harness)));
  } catch (error) {
    report(error);
  }
  $("create-cwd").focus();
});
$("create-cancel").addEventListener("click", () => { $("create").hidden = true; });
$("create").addEventListener("submit", async (e) => {
  e.preventDefault();
  const params = { harness: $("create-harness").value, cwd: $("create-cwd").value,
                   permissions: { mode: $("create-permissions").value } };
  if ($("create-name").value) params.name = $("create-name").value;
  if ($("create-prompt").value) params.prompt = $("create-prompt").value;
  try {
    const { session } = await client.request("session.create", params);
    $("create").hidden = true;
    $("create-error").textContent = "";
    await refresh();
    select(session.id);
  } catch (error) {
    $("create-error").textContent = `${error.code}: ${error.message}`;
  }
});
document.addEventListener("keydown", (e) => {
  const target = e.target;
  if (e.ctrlKey || e.metaKey || e.altKey || target.closest("input, textarea, select")) return;
  if (e.key === "/") { e.preventDefault(); $("prompt").focus(); return; }
  const decision = { a: "allow", d: "deny", s: "allow_always" }[e.key];
  const card = transcript.oldestPermission();
  if (decision && card) {
    e.preventDefault();
    decide(card.dataset.permissionId, decision);
  }
});
window.addEventListener("hashchange", () => select(location.hash.slice(1) || null));

// The login URL's code is spent: keep it out of the address bar (and of a reload).
if (location.pathname !== "/") history.replaceState(null, "", `/${location.hash}`);
select(location.hash.slice(1) || null);
client.connect();
setInterval(() => { refresh(); renderList(); }, POLL_MS);
