#include <stdio.h>
int api(int);
int helper(int x) { return x + 1000; }
int main(void) { printf("%d\n", api(1)); return 0; }
