__thread int mine = 5;
