#include <stdio.h>
#include "greet.h"

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 1; i < argc; i++) total += count_words(argv[i]);
    printf("%d words\n", total);
    return 0;
}
