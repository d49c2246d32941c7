"""The session actor and what it owns: event log, policy, tracker, prompt queue."""
