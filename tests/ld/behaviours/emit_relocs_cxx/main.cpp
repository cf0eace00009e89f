#include <iostream>
#include <vector>
#include <stdexcept>
template<class T> T sum(const std::vector<T>& v){ T s{}; for (auto x: v) s += x; if (s > 100) throw std::runtime_error("big"); return s; }
int main(){ try { std::vector<int> v{50,60}; std::cout << sum(v) << "\n"; } catch (const std::exception& e) { std::cout << e.what() << "\n"; } return 0; }
