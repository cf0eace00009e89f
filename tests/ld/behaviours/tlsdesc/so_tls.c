__thread int theirs = 30;
