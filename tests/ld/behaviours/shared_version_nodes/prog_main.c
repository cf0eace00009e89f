#include <stdio.h>
int api(int); int api2(int);
int main(void) { printf("%d %d\n", api(1), api2(3)); return 0; }
