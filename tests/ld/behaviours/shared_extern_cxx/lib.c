int api(int x) { return x + 1; }
