__thread int tvar = 42;            /* .tdata: the definition the common meets, which wins */
__thread int other;                /* .tbss */
