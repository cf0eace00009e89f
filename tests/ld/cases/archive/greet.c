const char *greeting = "hello from greet.c";
