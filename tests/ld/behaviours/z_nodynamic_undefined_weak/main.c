#include <stdio.h>
extern int wfun(void) __attribute__((weak));
extern int wdata __attribute__((weak));
int main(void) { printf("%d %d\n", wfun ? wfun() : -1, &wdata ? wdata : -2); return 0; }
