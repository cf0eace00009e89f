int hidden_fn(int x) { return x + 100; }
int api(int x) { return hidden_fn(x) + 1; }
int api2(int x) { return x * 2; }
