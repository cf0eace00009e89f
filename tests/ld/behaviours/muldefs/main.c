#include <stdio.h>
int which(void);
int main(void) { printf("which %d\n", which()); return 0; }
