int which(void) { return 1; }
