#include <pthread.h>
#include <stdio.h>
int bump(void);
static void *run(void *arg) { bump(); printf("thread %d\n", bump()); return arg; }
int main(void) {
    printf("main %d\n", bump());
    pthread_t t;
    pthread_create(&t, 0, run, 0);
    pthread_join(t, 0);
    printf("main %d\n", bump());
    return 0;
}
