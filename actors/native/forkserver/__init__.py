"""The native fork server's process: a pre-imported, warmed-up template that forks native
workers (``server``, run as ``python -m actors.native.forkserver``) and its warm-up turns
(``warmup``). The daemon starts and talks to it from ``actors.native.daemon.forkservice``."""
