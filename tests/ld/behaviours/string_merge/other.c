const char *other(void) { return "shared literal"; }
