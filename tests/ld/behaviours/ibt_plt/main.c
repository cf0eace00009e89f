#include <stdio.h>
int main(void) { puts("ibt"); return 0; }
