#include <stdio.h>
extern int counter;                   /* another object's: mov counter@GOTPCREL(%rip) -> lea (PC32) */
extern int bump(int);
static int twice(int x) { return 2 * x; }
static int (*const table[])(int) = { twice, bump };   /* .data.rel.ro: R_X86_64_64, RELATIVE at run time */
const char *names[] = { "zero", "one" };              /* strings in a merged section */
int main(void) {
    int v = 0;
    for (int i = 0; i < 2; i++)
        v += table[i](i + 1);
    counter += v;
    printf("%s %s %d\n", names[0], names[1], counter);
    return 0;
}
