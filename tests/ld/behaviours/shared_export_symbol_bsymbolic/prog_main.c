#include <stdio.h>
int call(void);
int f1(void) { return 5; }
int f2(void) { return 7; }
int main(void) { printf("%d\n", call()); return 0; }
