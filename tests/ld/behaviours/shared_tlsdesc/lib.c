__thread int own = 3;
static __thread int mine = 4;
int bump(void) { own++; mine += 2; return own + mine; }
