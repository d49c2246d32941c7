"""The native harness in the CLI's process, without a daemon: ``corral run`` and ``corral probe``
(``runcli``, one turn by ``oneshot``) and ``corral skills`` (``skillscmd``)."""
