#include <stdio.h>
int main(void) { puts("rpath"); return 0; }
