// errno is per thread: each thread provokes its own error value.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>

static pthread_barrier_t bar;

static void *work(void *arg) {
    int which = *(int *)arg;
    if (which == 0) { errno = 0; strtol("99999999999999999999999", NULL, 10); }
    else if (which == 1) { open("/nonexistent/file", O_RDONLY); }
    else if (which == 2) { close(-1); }
    else errno = 0;
    pthread_barrier_wait(&bar);
    int *out = malloc(sizeof *out);
    *out = errno;
    return out;
}

int main(void) {
    pthread_t t[4];
    int ids[4] = {0, 1, 2, 3};
    pthread_barrier_init(&bar, NULL, 4);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, &ids[i]);
    for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); printf("thread %d errno %d\n", i, *(int *)r); free(r); }
    return 0;
}
