// lw-cflags: -fPIC
__thread int other_tls = 7;
int bump_other(int by) { other_tls += by; return other_tls; }
