#include <stdio.h>
/* compiled with -Wa,-L: the object keeps the assembler's local labels (.LFB0, .LC0) */
static int counter = 3;
static __attribute__((noinline)) int helper(int x) { return x + counter++; }
int main(void) { printf("discard %d\n", helper(1)); return 0; }
