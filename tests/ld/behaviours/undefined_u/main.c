#include <stdio.h>
int main(void) { puts("main"); return 0; }
