#include <stdio.h>
static int local_data = 4;
int global_data = 6;
extern int helper(int);
int main(void) { printf("large %d\n", helper(local_data) + global_data); return 0; }
