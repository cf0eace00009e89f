#include <stdio.h>
int lib_value(void);
int main(void) { printf("lib says %d\n", lib_value()); return 0; }
