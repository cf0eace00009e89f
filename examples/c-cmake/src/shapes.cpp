#include "shapes.hpp"

#include <sstream>

namespace shapes {
static const double pi = 3.14159265358979;
double area(const Rect &r) { return r.w * r.h; }
double area(const Circle &c) { return pi * c.r * c.r; }
double perimeter(const Rect &r) { return 2 * (r.w + r.h); }
double perimeter(const Circle &c) { return 2 * pi * c.r; }
std::string describe(const Rect &r) {
    std::ostringstream out;
    out << r.w << "x" << r.h << " rectangle";
    return out.str();
}
}  // namespace shapes

extern "C" const char *shapes_version(void) { return "libshapes 1.0"; }
