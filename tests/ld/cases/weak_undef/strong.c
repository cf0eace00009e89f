const char *who(void) { return "strong override"; }
