// lw-cflags: -fPIC
// TLS in all four models (compiled -fPIC so the general- and local-dynamic
// sequences are really emitted), checked from four threads.
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>

__thread int gd_var __attribute__((tls_model("global-dynamic"))) = 1;
static __thread int ld_var __attribute__((tls_model("local-dynamic"))) = 2;
static __thread int ld_var2 __attribute__((tls_model("local-dynamic")));
__thread int ie_var __attribute__((tls_model("initial-exec"))) = 3;
static __thread int le_var __attribute__((tls_model("local-exec")));
static __thread char buffer[64];
extern __thread int other_tls;   /* defined in second.c */
int bump_other(int);

static void *work(void *arg) {
    int id = (int)(intptr_t)arg;
    gd_var += id; ld_var += 10 * id; ld_var2 = id; ie_var *= id + 1; le_var = 100 + id;
    buffer[0] = 'a' + id; buffer[1] = 0;
    int o = bump_other(id);
    return (void *)(intptr_t)(gd_var + ld_var + ld_var2 + ie_var + le_var + buffer[0] + o);
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)(intptr_t)i);
    for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); printf("tls%d=%ld\n", i, (long)(intptr_t)r); }
    printf("main_tls=%d %d %d %d %d %d\n", gd_var, ld_var, ld_var2, ie_var, le_var, other_tls);
    return 0;
}
