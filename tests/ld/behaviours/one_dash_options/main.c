#include <stdio.h>
int main(void) { puts("one dash"); return 0; }
