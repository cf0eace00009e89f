#include <stdio.h>
__attribute__((section(".mysec"))) int placed = 9;
__attribute__((section(".mycode"), noinline)) int triple(int x) { return 3 * x; }
int main(void) { printf("%d %d\n", placed, triple(placed)); return 0; }
