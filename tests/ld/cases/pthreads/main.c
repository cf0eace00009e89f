// pthreads: four workers, a mutex, a condition variable and thread return values.
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long shared_sum;
static int done;

static void *worker(void *arg) {
    long id = (long)(intptr_t)arg, local = 0;
    for (long i = 0; i < 100000; i++) local += i % (id + 2);
    pthread_mutex_lock(&lock);
    shared_sum += local;
    done++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return (void *)(intptr_t)(id * 10);
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    pthread_mutex_lock(&lock);
    while (done < 4) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    long rets = 0;
    for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); rets += (long)(intptr_t)r; }
    printf("sum %ld rets %ld\n", shared_sum, rets);
    return 0;
}
