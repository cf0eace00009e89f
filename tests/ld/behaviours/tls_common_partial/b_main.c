#include <stdio.h>
int get_common(void);
extern __thread int tvar;          /* only the common defines it: GNU ld puts it in .tbss */
int main(void) { tvar += 1; printf("%d %d\n", get_common(), tvar); return 0; }
