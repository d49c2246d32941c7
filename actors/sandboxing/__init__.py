"""Sandboxed sessions: ``[sandbox]``, a session's settings (``settings``), its plan (``plans``,
with the harness profiles and git's rules) and how a launch is confined (``confine``). The
mechanisms are ``supervisor.sandbox``'s."""
