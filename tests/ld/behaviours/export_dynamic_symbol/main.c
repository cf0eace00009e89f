#include <stdio.h>
int exp_one(void) { return 1; }
int exp_two(void) { return 2; }
int kept_inside(void) { return 3; }
int main(void) { printf("%d\n", exp_one() + exp_two() + kept_inside()); return 0; }
