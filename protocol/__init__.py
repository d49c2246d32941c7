"""corral's wire: every message as a msgspec Struct, codecs and framers. Pure: no I/O, no trio."""
