// libshapes: the shared library every program of this example links against.
#ifndef SHAPES_HPP
#define SHAPES_HPP

#ifdef __cplusplus
#include <string>

namespace shapes {
struct Rect { double w, h; };
struct Circle { double r; };
double area(const Rect &r);
double area(const Circle &c);
double perimeter(const Rect &r);
double perimeter(const Circle &c);
std::string describe(const Rect &r);
}  // namespace shapes

extern "C" {
#endif

/* For C callers. */
const char *shapes_version(void);

#ifdef __cplusplus
}
#endif
#endif
