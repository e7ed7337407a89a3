package com.shop.util;

public class Strings {
    public static String upper(String s) {
        return s.toUpperCase();
    }
}
