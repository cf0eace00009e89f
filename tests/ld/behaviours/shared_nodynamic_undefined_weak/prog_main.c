#include <stdio.h>
int wlib(void);
int main(void){printf("%d\n", wlib());return 0;}
