#include <stdio.h>
int shared_common;                    /* common: stays common in the -r output */
__thread int per_thread = 2;
static int helper(int x) { return x * 3; }
int other(int);
int from_archive(void);
__attribute__((constructor)) static void early(void) { shared_common = 4; }
int main(void) {
    printf("%s %d %d %d\n", "partial link", other(helper(per_thread)), shared_common, from_archive());
    return 0;
}
