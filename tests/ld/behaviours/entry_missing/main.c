#include <stdio.h>
int main(void) { puts("entry"); return 0; }
