"""The link records: SQLite store (db.py), its migrations and the spool ingester."""
