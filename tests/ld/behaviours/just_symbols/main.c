#include <stdio.h>
extern char fixed_a[], fixed_b[];
extern void fixed_fn(void);
extern int weak_one __attribute__((weak));
int main(void) {
    /* -fno-pie: each address is an R_X86_64_32 the linker fills with the -R file's value */
    printf("%lx %lx %lx %lx\n", (unsigned long)fixed_a, (unsigned long)fixed_b, (unsigned long)&fixed_fn,
           (unsigned long)&weak_one);
    return 0;
}
