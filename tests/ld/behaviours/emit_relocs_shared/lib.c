#include <stdio.h>
int shared_counter = 5;                        /* exported, interposable: GOTPCREL kept (GLOB_DAT) */
static int hidden_twice(int x) { return 2 * x; }
int (*const lib_table[])(int) = { hidden_twice };
int lib_value(int x) { return lib_table[0](x) + shared_counter; }
void lib_say(void) { printf("lib %d\n", lib_value(3)); }
