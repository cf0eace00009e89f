#ifndef GREET_H
#define GREET_H
/* libgreet.so: the shared library both programs link against. */
const char *greeting(void);
int count_words(const char *text);
#endif
