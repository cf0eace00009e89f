#include <stdio.h>
const char *other(void);
int main(void) { const char *a = "shared literal"; printf("%s %s\n", a, a == other() ? "merged" : "distinct"); return 0; }
