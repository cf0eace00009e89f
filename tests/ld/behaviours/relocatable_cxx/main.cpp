#include <cstdio>
#include <stdexcept>
template <class T> T twice(T x) { return 2 * x; }
struct Shape { virtual int sides() const { return 0; } virtual ~Shape() {} };
int thrower(int);
int other(int);
int main() {
    Shape s;
    const Shape &r = s;
    try { thrower(1); } catch (const std::runtime_error &e) { std::printf("caught %s\n", e.what()); }
    std::printf("%d %d %d\n", twice(3), other(4), r.sides());
    return 0;
}
