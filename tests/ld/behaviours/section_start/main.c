#include <stdio.h>
__attribute__((section(".mysec"))) int placed = 9;
__attribute__((section(".mycode"), noinline)) int triple(int x) { return 3 * x; }
int main(void) {
    printf("%d %s %d %s\n", placed, (unsigned long)&placed == 0x900000 ? "at 0x900000" : "elsewhere",
           triple(placed), (unsigned long)&triple == 0xa00000 ? "at 0xa00000" : "elsewhere");
    return 0;
}
