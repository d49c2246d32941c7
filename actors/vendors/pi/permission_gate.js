// corral's permission gate for pi (shipped with corral, loaded with `pi -e <this file>`).
//
// pi runs every tool without asking. This extension makes each tool call that can change
// something (bash, edit, write, and any tool not known to be read-only) ask the client first,
// through pi's RPC extension UI: an `extension_ui_request` with method "confirm" whose title is
// "corral.permission" and whose message is JSON {tool, callId, input}. corral answers with
// `extension_ui_response` {confirmed: true|false} (or {cancelled: true}); anything but a yes
// blocks the call, and the model is told the user denied it. An interrupt (the turn's abort
// signal) withdraws the question and blocks the call.

const READ_ONLY = new Set(["read", "grep", "find", "ls"]);

export default function corralPermissionGate(pi) {
	pi.on("tool_call", async (event, ctx) => {
		if (READ_ONLY.has(event.toolName)) return undefined;
		if (!ctx.hasUI) return { block: true, reason: "corral: no client can approve this tool call" };
		const question = JSON.stringify({ tool: event.toolName, callId: event.toolCallId, input: event.input });
		const allowed = await ctx.ui.confirm("corral.permission", question, { signal: ctx.signal });
		return allowed ? undefined : { block: true, reason: "The user denied this tool call." };
	});
}
