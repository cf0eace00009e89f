int from_archive(void) { return 9; }
