// Small DOM helpers. Text always goes in as text nodes: nothing from the daemon is parsed as HTML.

/** An element with attributes and children (strings become text nodes). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(name, String(value));
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/** A value as readable text: strings as they are, anything else as indented JSON. */
export function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** A unified diff (text) as coloured lines. */
export function diffLines(text) {
  const pre = el("pre", { class: "diff-lines" });
  for (const line of text.split("\n")) {
    let kind = "";
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) kind = "file";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    pre.append(el("span", { class: kind }, line + "\n"));
  }
  return pre;
}

/** An edit tool's input as a diff where its shape allows one, else as JSON. */
export function renderDiff(input) {
  if (input === null || typeof input !== "object") return el("pre", {}, json(input));
  const path = input.file_path || input.path || input.filePath || "";
  for (const key of ["diff", "patch", "unified_diff"]) {
    if (typeof input[key] === "string") return diffLines(input[key]);
  }
  const before = input.old_string ?? input.oldString ?? input.old_str;
  const after = input.new_string ?? input.newString ?? input.new_str ?? input.content;
  if (typeof after === "string") {
    const lines = [`--- ${path}`, `+++ ${path}`];
    if (typeof before === "string" && before !== "") lines.push(...before.split("\n").map((l) => `-${l}`));
    lines.push(...after.split("\n").map((l) => `+${l}`));
    return diffLines(lines.join("\n"));
  }
  return el("pre", {}, json(input));
}

/** The card of an open permission request, with its Allow / Deny / Always buttons. */
export function permissionCard(event) {
  const options = Array.isArray(event.options) && event.options.length ? event.options : ["allow", "deny"];
  const labels = { allow: ["Allow", "a"], deny: ["Deny", "d"], allow_always: ["Always", "s"] };
  const buttons = el("div", { class: "row" });
  for (const decision of ["allow", "deny", "allow_always"]) {
    if (!options.includes(decision) && decision !== "deny") continue;
    const [label, key] = labels[decision];
    buttons.append(el("button", {
      type: "button", class: `decide ${decision}`, "data-decision": decision,
      "data-permission-id": event.permission_id, "aria-keyshortcuts": key,
    }, label));
  }
  const input = event.kind === "edit" ? renderDiff(event.input) : el("pre", {}, json(event.input));
  return el("div", {
    class: "permission", role: "group", "data-permission-id": event.permission_id,
    "aria-label": `Permission request ${event.permission_id}: ${event.tool}`,
  }, el("p", {}, el("strong", {}, `${event.tool}`), ` wants to run (${event.kind}):`), input, buttons);
}
