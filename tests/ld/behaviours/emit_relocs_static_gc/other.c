int counter = 10;
__attribute__((noinline)) int bump(int x) { return x + counter; }
int unused(int x) { return x * counter; }      /* dropped by --gc-sections: its debug relocations become NONE */
