/* a hidden function: local in the shared object's .symtab, LOCAL DEFAULT as GNU ld writes it */
__attribute__((visibility("hidden"), noinline)) int hidden_twice(int x) { return 2 * x; }
int lib_value(int x) { return hidden_twice(x) + 1; }
