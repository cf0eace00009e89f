"""Measuring links: saving them for replay (save.py), replaying them on every linker (replay.py),
and the small cache of results the link path reads (measured.py). Only measured.py is on the link path."""
