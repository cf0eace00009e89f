// lw-cflags: -fcommon
// Tentative definitions (-fcommon) in two files merge into one object.
#include <stdio.h>
int counter;
int big_table[1000];
void bump(void);

int main(void) {
    for (int i = 0; i < 5; i++) bump();
    big_table[999] = counter;
    printf("counter %d table %d\n", counter, big_table[999]);
    return 0;
}
