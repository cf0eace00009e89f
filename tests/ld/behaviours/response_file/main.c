#include <stdio.h>
extern char answer[];
int main(void) { printf("answer %lu\n", (unsigned long)answer); return 0; }
