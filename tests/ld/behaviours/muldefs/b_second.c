int which(void) { return 2; }
