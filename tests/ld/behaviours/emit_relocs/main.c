#include <stdio.h>
int main(void) { puts("emit"); return 0; }
