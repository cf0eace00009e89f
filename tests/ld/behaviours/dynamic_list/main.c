#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
void hook(void) {}
void glob_one(void) {}
void hidden_one(void) {}
int main(void) {
    const char *names[] = {"hook", "glob_one", "hidden_one"};
    for (int i = 0; i < 3; i++)
        printf("%s %s\n", names[i], dlsym(RTLD_DEFAULT, names[i]) ? "exported" : "not exported");
    return 0;
}
