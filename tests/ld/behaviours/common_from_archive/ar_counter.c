int counter = 5;
