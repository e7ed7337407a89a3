package com.shop.store;

import com.shop.util.Retry;
import java.util.ArrayList;
import java.util.List;

public class Store {
    private final List<String> rows = new ArrayList<>();
    private Connection connection;

    public Store(String url) {
        this.connection = Connection.open(url, Retry.attempts(3, 1));
    }

    public void save(String row) {
        rows.add(row);
        connection.send(row);
    }

    public Connection connection() {
        return connection;
    }
}
