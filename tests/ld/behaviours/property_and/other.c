int unused_helper(int x) { return x + 1; }
