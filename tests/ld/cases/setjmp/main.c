// setjmp/longjmp across frames, including from a callback.
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static int depth;

static void dive(int n) {
    depth = n;
    if (n == 5) longjmp(env, n * 7);
    dive(n + 1);
}

int main(void) {
    volatile int rounds = 0;
    int r = setjmp(env);
    printf("setjmp returned %d (round %d)\n", r, rounds);
    if (rounds++ < 2) dive(0);
    printf("depth %d\n", depth);
    return r == 35 ? 0 : 1;
}
