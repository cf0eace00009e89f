#include <ctype.h>
#include "greet.h"

const char *greeting(void) { return "hello from libgreet"; }

int count_words(const char *text) {
    int n = 0, in_word = 0;
    for (; *text; text++) {
        if (isspace((unsigned char)*text)) in_word = 0;
        else if (!in_word) { in_word = 1; n++; }
    }
    return n;
}
