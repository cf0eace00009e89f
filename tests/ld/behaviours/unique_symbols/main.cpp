#include <cstdio>
inline int &counter() { static int c = 0; return c; }
int bump();
int main() { counter() += 2; std::printf("%d\n", bump()); return 0; }
