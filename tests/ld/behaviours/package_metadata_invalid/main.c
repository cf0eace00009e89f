#include <stdio.h>
int data = 3;
int main(void) { printf("%d\n", data); return 0; }
