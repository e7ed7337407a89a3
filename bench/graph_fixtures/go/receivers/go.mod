module example.com/srv
