#include <stdio.h>
int api(int);
int main(void) { printf("%d\n", api(41)); return 0; }
