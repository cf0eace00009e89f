#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
int get_common(void);
extern __thread int tvar;          /* only the commons define them */
extern __thread char tarr[64];
__thread int own_tbss;
__thread int own_tdata = 5;
static void *worker(void *arg) {
    tvar += 100; tarr[63] = 9;
    printf("thread %d %d %d %d\n", get_common(), tarr[63], own_tdata, (int)((uintptr_t)tarr % 64));
    return arg;
}
int main(void) {
    pthread_t t;
    tvar += 1; tarr[0] = 3; own_tbss = 2;
    pthread_create(&t, 0, worker, 0);
    pthread_join(t, 0);
    printf("main %d %d %d %d %d %d\n", get_common(), tvar, tarr[0], tarr[63], own_tbss + own_tdata,
           (int)((uintptr_t)tarr % 64));
    return 0;
}
