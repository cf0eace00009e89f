extern int wfun(void) __attribute__((weak));
int wlib(void){ return wfun ? 5 : 6; }
