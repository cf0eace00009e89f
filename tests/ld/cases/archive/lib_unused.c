int never_called(void) { return 42; }
int square_dup_marker;
