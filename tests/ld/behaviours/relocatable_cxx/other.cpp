#include <stdexcept>
template <class T> T twice(T x) { return 2 * x; }
struct Shape { virtual int sides() const { return 0; } virtual ~Shape() {} };
struct Square : Shape { int sides() const override { return 4; } };
int other(int x) { Square q; Shape &s = q; return twice(x) + s.sides(); }
int thrower(int x) { if (x) throw std::runtime_error("across objects"); return 0; }
