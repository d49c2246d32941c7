"""corral's actors: sessions, harness drivers, and the servers sessions reach."""
