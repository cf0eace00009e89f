// A weak undefined function and variable resolve to 0; a weak definition is overridden.
#include <stdio.h>

extern int missing_function(void) __attribute__((weak));
extern int missing_variable __attribute__((weak));
__attribute__((weak)) const char *who(void) { return "weak default"; }

int main(void) {
    printf("function %s\n", missing_function ? "present" : "absent");
    printf("variable %s\n", &missing_variable ? "present" : "absent");
    printf("who: %s\n", who());
    return missing_function ? 1 : 0;
}
