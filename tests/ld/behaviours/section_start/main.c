#include <stdio.h>
__attribute__((section(".mysec"))) int placed = 9;
int main(void) { printf("%d %s\n", placed, (unsigned long)&placed == 0x900000 ? "at 0x900000" : "elsewhere"); return 0; }
