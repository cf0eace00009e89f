"""What the choice learns from and the record writes: measured linker times (measured), the
output's own relinks (learn), the memory history and its prediction (predict)."""
