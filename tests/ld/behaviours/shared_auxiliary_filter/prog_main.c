#include <stdio.h>
int lib_value(int);
int main(void) { printf("%d\n", lib_value(20)); return 0; }
