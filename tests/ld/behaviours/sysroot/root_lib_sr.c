int sr_value(void) { return 11; }
