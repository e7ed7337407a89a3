module example.com/logs
