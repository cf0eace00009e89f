__thread int tvar = 7;            /* .tdata: the definition the common meets, which wins */
__thread int other;                /* .tbss */
