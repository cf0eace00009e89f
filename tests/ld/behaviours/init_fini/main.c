#include <stdio.h>
#include <unistd.h>
void my_init(void) { write(1, "my_init\n", 8); }
void my_fini(void) { write(1, "my_fini\n", 8); }
int main(void) { printf("main\n"); fflush(stdout); return 0; }
