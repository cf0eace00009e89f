#include <iostream>

#include "shapes.hpp"

int main() {
    shapes::Rect r{3, 4};
    std::cout << "perimeter of " << shapes::describe(r) << ": " << shapes::perimeter(r) << "\n";
    return 0;
}
