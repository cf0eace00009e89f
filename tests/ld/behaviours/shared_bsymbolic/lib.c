int helper(int x) { return x + 1; }
int (*pointer)(int) = helper;
int api(int x) { return helper(x) * 10 + pointer(x); }
