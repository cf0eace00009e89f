// atexit handlers run in reverse order, then the exit status is passed on.
#include <stdio.h>
#include <stdlib.h>

static void a(void) { printf("handler a\n"); }
static void b(void) { printf("handler b\n"); }
static void c(void) { printf("handler c\n"); fflush(stdout); }

int main(void) {
    atexit(a); atexit(b); atexit(c);
    printf("main done\n");
    exit(3);
}
