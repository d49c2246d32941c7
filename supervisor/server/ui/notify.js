// System notifications while the tab is hidden: the "Notifications" switch in the top bar.
//
// Turning the switch on asks for the Notification permission (it stays off if refused) and is
// remembered by the browser (localStorage). Then, only while `document.visibilityState` is
// "hidden", the open session's permission requests and finished turns (its live events), and
// the other sessions' moves to "waiting" or from "running" to "idle" (the polled list), show a
// system notification; clicking one brings the tab back on that session. Events replayed from
// history (older than a minute) notify nothing.

const KEY = "corral.notifications";
const FRESH_MS = 60_000;

export class Notifier {
  constructor(button, open) {
    this.button = button;
    this.open = open; // (sessionId) => void
    this.enabled = this.supported && localStorage.getItem(KEY) === "on" && Notification.permission === "granted";
    this.button.hidden = !this.supported;
    this.button.addEventListener("click", () => this.toggle());
    this.render();
  }

  get supported() {
    return "Notification" in window;
  }

  async toggle() {
    if (this.enabled) return this.set(false);
    let permission = Notification.permission;
    if (permission !== "granted") permission = await Notification.requestPermission();
    this.set(permission === "granted");
  }

  set(on) {
    this.enabled = on;
    localStorage.setItem(KEY, on ? "on" : "off");
    this.render();
  }

  render() {
    this.button.setAttribute("aria-checked", String(this.enabled));
    this.button.title = this.enabled ? "System notifications while this tab is hidden: on"
      : "Show a system notification for permission requests and finished turns while this tab is hidden";
  }

  // A live event of the open session (`name`: its name or id).
  fromEvent(frame, name) {
    if (Date.now() - Date.parse(frame.ts) > FRESH_MS) return;
    const event = frame.event;
    if (event.type === "permission" && !event.policy) {
      this.show(frame.session_id, "permission", `${name}: permission needed`, `${event.tool} wants to run`);
    } else if (event.type === "result") {
      this.show(frame.session_id, "turn", `${name}: turn ${event.is_error ? "ended with an error" : "done"}`,
        event.stop_reason || "");
    }
  }

  // A session of the list (not the open one) whose state changed from `before` to `info.state`.
  fromList(before, info) {
    const name = info.name || info.id;
    if (info.state === "waiting" && before !== "waiting") {
      this.show(info.id, "permission", `${name}: permission needed`, "a tool wants to run");
    } else if (before === "running" && info.state === "idle") {
      this.show(info.id, "turn", `${name}: turn done`, "");
    }
  }

  show(sessionId, kind, title, body) {
    if (!this.enabled || document.visibilityState !== "hidden") return;
    if (Notification.permission !== "granted") return this.set(false);
    const note = new Notification(title, { body, tag: `${sessionId}:${kind}` });
    note.addEventListener("click", () => {
      window.focus();
      this.open(sessionId);
      note.close();
    });
  }
}
