#include <stdio.h>
int lib_entry(int);
int main(void) { printf("%d\n", lib_entry(1)); return 0; }
