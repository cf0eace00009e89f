void lib_say(void);
int main(void) { lib_say(); return 0; }
