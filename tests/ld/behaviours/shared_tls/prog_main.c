#include <pthread.h>
#include <stdio.h>
int bump(void);
extern __thread int gd;
static void *run(void *arg) { int b = bump(); printf("thread %d %d\n", b, gd); return arg; }
int main(void) {
    printf("main %d\n", bump());
    pthread_t t;
    pthread_create(&t, 0, run, 0);
    pthread_join(t, 0);
    int b = bump();
    printf("main %d %d\n", b, gd);
    return 0;
}
