#include <stdio.h>
static int local_counter = 3;
__thread int tvar = 4;
int global_data = 5;
__attribute__((weak)) int weak_fn(void) { return 1; }
static __attribute__((noinline)) void helper(void) { printf("%d\n", local_counter + tvar + weak_fn()); }
int main(void) { helper(); puts("symbols"); return 0; }
