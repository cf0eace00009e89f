/* f1 is listed: the program's f1 interposes it; f2 is not: the library's call binds to its own */
int f1(void) { return 1; }
int f2(void) { return 2; }
int call(void) { return 10 * f1() + f2(); }
