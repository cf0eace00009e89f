// Constructors and destructors with priorities; init and fini arrays run in the right order.
#include <stdio.h>

__attribute__((constructor(200))) static void c200(void) { printf("ctor 200\n"); }
__attribute__((constructor(101))) static void c101(void) { printf("ctor 101\n"); }
__attribute__((constructor)) static void cdefault(void) { printf("ctor default\n"); }
__attribute__((constructor(65000))) static void c65000(void) { printf("ctor 65000\n"); }
__attribute__((destructor(150))) static void d150(void) { printf("dtor 150\n"); }
__attribute__((destructor(300))) static void d300(void) { printf("dtor 300\n"); }
__attribute__((destructor)) static void ddefault(void) { printf("dtor default\n"); }
void second_ctor_marker(void);

int main(void) { printf("main\n"); second_ctor_marker(); return 0; }
