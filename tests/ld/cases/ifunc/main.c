// IFUNC: a user-defined resolver, and glibc's IFUNC string functions (strlen, memcpy, strchr...).
#include <stdio.h>
#include <string.h>

static int impl_fast(int x) { return x * 2; }
static int impl_slow(int x) { return x + x; }
static void *resolve_twice(void) { return __builtin_cpu_supports("sse2") ? (void *)impl_fast : (void *)impl_slow; }
int twice(int) __attribute__((ifunc("resolve_twice")));
int (*twice_ptr)(int) = twice;

int main(void) {
    char a[64], b[64];
    memset(a, 'x', 40); a[40] = 0;
    memcpy(b, a, 41);
    printf("strlen %zu strchr %ld cmp %d\n", strlen(b), (long)(strchr(b, 'x') - b), strcmp(a, b));
    printf("twice %d ptr %d\n", twice(21), twice_ptr(4));
    return 0;
}
