inline int &counter() { static int c = 0; return c; }
int bump() { return ++counter(); }
