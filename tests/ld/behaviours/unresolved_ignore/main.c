#include <stdio.h>
void never_defined(void);
int main(int argc, char **argv) { if (argc > 5) never_defined(); puts("ok"); return 0; }
