int ar_func(int);
int lib_entry(int x) { return ar_func(x) * 2; }
