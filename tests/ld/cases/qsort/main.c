// qsort and bsearch with callbacks (function pointers into the executable).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
int (*const table[2])(const void *, const void *) = {cmp_int, cmp_str};

int main(void) {
    int v[64];
    unsigned x = 12345;
    for (int i = 0; i < 64; i++) { x = x * 1103515245 + 12345; v[i] = (x >> 8) % 1000; }
    qsort(v, 64, sizeof v[0], table[0]);
    for (int i = 0; i < 64; i += 8) printf("%d ", v[i]);
    printf("\n");
    const char *w[] = {"pear", "apple", "fig", "kiwi", "banana"};
    qsort(w, 5, sizeof w[0], table[1]);
    for (int i = 0; i < 5; i++) printf("%s ", w[i]);
    int key = v[17];
    int *hit = bsearch(&key, v, 64, sizeof v[0], cmp_int);
    printf("\nfound %d\n", hit ? *hit : -1);
    return 0;
}
