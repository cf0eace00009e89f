// C++: exceptions thrown through frames, iostream, std::string, a static object's constructor.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

struct Global { Global() { std::cout << "global ctor\n"; } ~Global() { std::cout << "global dtor\n"; } } g;

static int thrower(int n) {
    if (n > 3) throw std::runtime_error("too deep: " + std::to_string(n));
    return thrower(n + 1) + 1;
}

int main() {
    std::vector<std::string> log;
    for (int i = 0; i < 3; i++) {
        try { thrower(i); } catch (const std::exception &e) { log.push_back(e.what()); }
    }
    for (auto &s : log) std::cout << s << '\n';
    try { throw 42; } catch (int v) { std::cout << "caught int " << v << std::endl; }
    return 0;
}
