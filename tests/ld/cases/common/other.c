// lw-cflags: -fcommon
int counter;
int big_table[1000];
void bump(void) { counter += 2; big_table[counter] = 1; }
