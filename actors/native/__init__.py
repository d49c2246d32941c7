"""The native harness: corral's own Google-ADK coding agent, run in a worker process."""
