"""RECORD: one row per link, written after the link is over. Never raises."""


def save(request, probe, decision, outcome, *, started_ns, first_attempt=None) -> None:
    pass  # filled in by the records work (issue #5)
