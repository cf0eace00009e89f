#include <stdio.h>
extern char answer[];
void greet(void) { puts("hello from greet"); }
void greet_alias(void);
int main(void) { printf("answer %lu\n", (unsigned long)answer); greet_alias(); return 0; }
