// The page's protocol client (PROTOCOL.md, version 1) over the daemon's own websocket.
//
// The page logged in with a cookie; the websocket carries it (same origin), so `hello` sends no
// token. A dropped connection (the daemon restarted, the network blinked) is reopened with a
// growing delay; `onOpen` then runs again so the page can resubscribe from its last seq.
// Every request gets exactly one answer: its promise resolves with `result` or rejects with
// an Error carrying the protocol's `code`; pending requests reject when the connection drops.

const PROTOCOL = 1;
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 3000;

export class ProtocolError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

export class Client {
  /** @param {{onOpen: () => void, onClose: (why: string) => void, onFrame: (frame: object) => void}} handlers */
  constructor(handlers) {
    this.handlers = handlers;
    this.url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1`;
    this.ids = 1;
    this.pending = new Map();
    this.ws = null;
    this.open = false;
    this.retry = RETRY_MIN_MS;
  }

  connect() {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "hello", protocol: PROTOCOL, token: "",
                               client: { name: "browser", version: "1" } }));
    };
    ws.onmessage = (message) => {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      this.receive(frame);
    };
    ws.onclose = (close) => {
      if (this.ws !== ws) return;
      this.open = false;
      for (const { reject } of this.pending.values()) reject(new ProtocolError("disconnected", "connection lost"));
      this.pending.clear();
      this.handlers.onClose(close.reason || `closed (${close.code})`);
      const delay = this.retry;
      this.retry = Math.min(this.retry * 2, RETRY_MAX_MS);
      setTimeout(() => this.connect(), delay);
    };
  }

  receive(frame) {
    switch (frame.type) {
      case "welcome":
        this.open = true;
        this.retry = RETRY_MIN_MS;
        this.handlers.onOpen(frame);
        return;
      case "ok":
      case "error": {
        const waiter = this.pending.get(frame.id);
        if (waiter === undefined) {
          if (frame.type === "error") this.handlers.onFrame(frame);
          return;
        }
        this.pending.delete(frame.id);
        if (frame.type === "ok") waiter.resolve(frame.result);
        else waiter.reject(new ProtocolError(frame.code, frame.message));
        return;
      }
      default:
        this.handlers.onFrame(frame);
    }
  }

  /** Send request `type` with `params`; resolves with its result. */
  request(type, params = {}) {
    if (!this.open) return Promise.reject(new ProtocolError("disconnected", "not connected"));
    const id = this.ids++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ ...params, type, id }));
    });
  }
}
