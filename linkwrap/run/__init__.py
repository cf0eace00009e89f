"""Running the chosen linker: the direct start (direct), the run and its fallback (run), and
the output's safety (output)."""
