"""What a link leaves behind: its record in the spool (record) and, for replay, its saved
inputs (save)."""
