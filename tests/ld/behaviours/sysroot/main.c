#include <stdio.h>
int sr_value(void);
int main(void) { printf("sysroot %d\n", sr_value()); return 0; }
