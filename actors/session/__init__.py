"""The session actor and what it owns: a sans-IO core (``core``) in one inbox loop (``actor``),
its harness child (``child``), event log, approvals, policy, tracker and prompt queue."""
