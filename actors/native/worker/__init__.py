"""The native worker process: asyncio + Google ADK, speaking ``protocol.native`` on stdio.

``main`` (the process), ``handler.Worker`` (commands → events), ``assembly`` (what ``start``
builds), ``turn.Turn`` (one turn over ADK invocations), ``agent`` (tools, model, app),
``events`` (ADK events → corral events), ``store`` (the durable JSONL session service).
Everything here imports ADK: the daemon never imports it.
"""
