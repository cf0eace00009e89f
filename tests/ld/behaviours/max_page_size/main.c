#include <stdio.h>
int data = 3;
int main(void) { printf("page %d\n", data); return 0; }
