module example.com/zoo
