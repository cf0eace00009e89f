#include <stdio.h>
void lib_fn(void) { puts("lib_fn"); }
void *lib_fn_address(void) { return (void *)lib_fn; }
