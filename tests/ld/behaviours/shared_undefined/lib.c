extern int provided_by_program(int);
extern int maybe_missing(int) __attribute__((weak));
int api(int x) { return provided_by_program(x) + (maybe_missing ? 1000 : 0); }
