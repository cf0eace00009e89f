#include <stdio.h>
int counter;              /* tentative: common */
int main(void) { printf("counter %d\n", counter); return 0; }
