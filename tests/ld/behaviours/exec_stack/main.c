#include <stdio.h>
int main(void) { puts("stack"); return 0; }
