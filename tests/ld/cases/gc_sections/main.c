// lw-cflags: -ffunction-sections -fdata-sections
// Unused functions and data in their own sections (removable by --gc-sections); a section
// reached only through __start_/__stop_ symbols; a used static constructor.
#include <stdio.h>

int unused_big(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x ^ (s >> 3); return s + 12345; }
int unused_table[4096] = {1, 2, 3};
static int used_helper(int x) { return x * 3; }
int used_table[4] = {5, 6, 7, 8};
__attribute__((section("lw_items"), used)) static const int item_a = 11;
__attribute__((section("lw_items"), used)) static const int item_b = 31;
extern const int __start_lw_items[], __stop_lw_items[];
__attribute__((constructor)) static void hello(void) { puts("ctor kept"); }

int main(void) {
    int sum = 0;
    for (const int *p = __start_lw_items; p < __stop_lw_items; p++) sum += *p;
    printf("helper %d table %d items %d\n", used_helper(14), used_table[2], sum);
    return 0;
}
