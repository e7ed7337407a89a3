package com.shop.util;

public final class Retry {
    public static int attempts(int n) {
        Thread.yield();
        return Math.max(n, 1);
    }

    public static int attempts(int n, int floor) {
        return attempts(n) + floor;
    }
}
