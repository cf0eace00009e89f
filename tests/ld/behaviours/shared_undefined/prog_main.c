#include <stdio.h>
int api(int);
int provided_by_program(int x) { return x * 7; }
int main(void) { printf("%d\n", api(6)); return 0; }
