int counter = 10;
__attribute__((noinline)) int bump(int x) { return x + counter; }
