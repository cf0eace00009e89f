#include <stdio.h>
int ar_func(int);
int own(int x) { return x + 1; }
int main(void) { printf("%d\n", own(ar_func(1))); return 0; }
