#include <stdio.h>
__attribute__((constructor)) static void hello(void) { puts("plugin loaded"); }
void plugin_register(void) {}
