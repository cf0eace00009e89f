"""Measuring links: replaying a saved link (record/save.py keeps it) on every linker, interleaved
(replay.py). What it measures goes to the store the link path reads (evidence/measured.py): bench
sits above the link path and writes below it, so the choice reads measurements as evidence."""
