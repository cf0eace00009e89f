#include <iostream>

#include "shapes.hpp"

int main() {
    shapes::Rect r{3, 4};
    std::cout << "area of " << shapes::describe(r) << ": " << shapes::area(r) << "\n";
    std::cout << "area of circle r=1: " << shapes::area(shapes::Circle{1}) << "\n";
    return 0;
}
