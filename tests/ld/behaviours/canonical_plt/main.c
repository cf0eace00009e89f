#include <stdio.h>
void lib_fn(void);
void *lib_fn_address(void);
static void (*const table[])(void) = {lib_fn};
int main(void) {
    void (*p)(void) = lib_fn;
    table[0]();
    printf("table %s, immediate %s\n", (void *)table[0] == lib_fn_address() ? "equal" : "differ",
           (void *)p == lib_fn_address() ? "equal" : "differ");
    return 0;
}
