#include <stdio.h>

#include "shapes.hpp"

int main(void) {
    printf("%s\n", shapes_version());
    return 0;
}
