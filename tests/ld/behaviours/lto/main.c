#include <stdio.h>
int main(void) { puts("lto"); return 0; }
