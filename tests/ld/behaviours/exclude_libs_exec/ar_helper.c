int ar_data = 7;
int ar_func(int x) { return x + ar_data; }
