#include <stdio.h>
int main(void) { puts("shstk"); return 0; }
