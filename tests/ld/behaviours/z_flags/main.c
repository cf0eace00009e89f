#include <stdio.h>
int main(void) { puts("flags"); return 0; }
