#include <stdio.h>
__attribute__((constructor(150))) static void c150(void) { printf("ctor 150 (second.c)\n"); }
__attribute__((constructor)) static void cdef2(void) { printf("ctor default (second.c)\n"); }
void second_ctor_marker(void) { printf("marker\n"); }
