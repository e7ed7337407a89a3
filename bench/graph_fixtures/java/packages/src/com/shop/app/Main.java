package com.shop.app;

import com.shop.store.*;
import com.shop.util.Strings;

public class Main {
    public static void main(String[] args) {
        Store store = new Store("db://");
        store.save(Strings.upper("x"));
        store.connection().send("direct");
        run(store);
        String joined = String.join(",", args);
        joined.length();
    }

    static void run(Store s) {
        s.save(com.shop.util.Strings.upper("y"));
    }
}
