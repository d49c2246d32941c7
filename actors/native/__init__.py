"""corral's own coding agent on Google ADK; each folder is the process that runs it.

* ``worker``: the native worker process (``python -m actors.native``), one per session;
* ``daemon``: the daemon's side (the driver, its translator, configuration, asks, the fork
  server's service and client);
* ``forkserver``: the fork server process (``python -m actors.native.forkserver``);
* ``cli``: ``corral run``, ``corral probe`` and ``corral skills`` in the CLI's process.

Shared by them: ``providers`` (the one model resolver), ``models`` (the adapters), ``tools``,
``context`` and ``compaction``.
"""
