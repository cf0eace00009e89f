#include <stdio.h>
extern int (*const table[])(void);
int main(void) { printf("%d\n", table[0]()); return 0; }
