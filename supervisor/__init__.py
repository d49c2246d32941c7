"""corral's Trio runtime, generic: it knows nothing of sessions or vendors.

Rooms: ``tree`` (mailboxes, supervisors), ``proc`` (OS-process children), ``ledger`` (the crash
ledger), ``server`` (listener and connections), ``client`` (the client library), ``cli`` (the
command line). Importing this package imports none of them.
"""

__version__ = "0.1.0"
