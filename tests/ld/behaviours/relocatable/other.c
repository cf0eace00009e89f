static const char *label = "partial link";
int other(int x) { return x + (label[0] == 'p'); }
