#include <stdio.h>
int get_common(void);
extern __thread int tvar;          /* a TLS reference after the common, before the definition */
extern __thread int other;
int main(void) { tvar += 1; other += 2; printf("%d %d %d\n", get_common(), tvar, other); return 0; }
