"""corral's own coding agent on Google ADK: coding tools, model adapters, the worker process,
and the daemon-side driver."""
