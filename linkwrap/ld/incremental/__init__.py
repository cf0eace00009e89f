"""Incremental linking: a full link that leaves room to patch, and relinks that patch it (issue 36).

`linkwrap ld --incremental ARGS...` links as ARGS ask, but places each input's contribution to each
output section as one chunk with slack after it (full.py) and keeps a state beside the output
(state.py): per input its identity and the hash of each section, the layout, the symbols with
their addresses, and for each symbol the places in other inputs that refer to it. The next
`--incremental` link of the same output with the same options patches the output (relink.py): only
the inputs that changed are read, their sections written into their chunks, their relocations
applied, and the references elsewhere to their symbols that moved applied again; whatever it cannot
patch exactly is a full incremental link, and the reason is said (explain, --incremental-why).

Stage order: state (below everything here) -> full (the passes of ld/driver with slack) -> relink
(reads the state, uses the passes' relocation code on the changed inputs) -> main (the command).
"""
