// Data that lives in libc: stdout, environ, optind (copy relocations in a PIE).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
extern char **environ;

int main(void) {
    setenv("LW_TEST_VAR", "value42", 1);
    int n = 0;
    for (char **e = environ; *e; e++) n++;
    fprintf(stdout, "getenv %s has_env %d optind %d\n", getenv("LW_TEST_VAR"), n > 0, optind);
    return 0;
}
