// Several objects and a static archive (lib_*.c become libcase.a); only needed members are pulled in.
#include <stdio.h>
int square(int);
int cube(int);
extern const char *greeting;

int main(void) {
    printf("%s square %d cube %d\n", greeting, square(7), cube(3));
    return 0;
}
