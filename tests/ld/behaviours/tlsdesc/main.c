#include <pthread.h>
#include <stdio.h>
extern __thread int mine;
extern __thread int theirs;
static void *work(void *arg) { mine += 1; theirs += 2; return (void *)(long)(mine * 10 + theirs); }
int main(void) {
    pthread_t t; void *r;
    pthread_create(&t, 0, work, 0); pthread_join(t, &r);
    printf("thread %ld main %d %d\n", (long)r, mine, theirs);
    return 0;
}
