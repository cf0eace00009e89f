__attribute__((tls_model("global-dynamic"))) __thread int gd = 1;
__attribute__((tls_model("local-dynamic"))) static __thread int ld = 2;
__attribute__((tls_model("initial-exec"))) __thread int ie = 3;
int bump(void) { gd += 10; ld += 20; ie += 30; return gd + ld + ie; }
