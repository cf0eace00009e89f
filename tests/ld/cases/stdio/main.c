// stdio: printf family, buffered and unbuffered streams, floating point formatting.
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int main(void) {
    char buf[128];
    printf("int %d hex %x str %s char %c\n", -42, 0xbeef, "hello", 'z');
    snprintf(buf, sizeof buf, "%.3f %e %g", 3.14159265, 12345.678, 0.0001);
    puts(buf);
    fprintf(stderr, "to stderr\n");
    fputs("fputs line\n", stdout);
    long total = 0;
    for (int i = 0; i < 1000; i++) total += (long)strlen(buf) * i;
    printf("total %ld atoi %d strtod %.2f\n", total, atoi("1234"), strtod("2.5e3", NULL));
    return 0;
}
