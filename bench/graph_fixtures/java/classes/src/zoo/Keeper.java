package zoo;

import java.util.HashMap;
import java.util.Map;

public class Keeper {
    private final Map<String, Animal> animals = new HashMap<>();

    public record Shift(String keeper, int hours) {
        public Shift {
            Animal.log(keeper);
        }

        int minutes() {
            return hours * 60;
        }
    }

    void open() {
        var dog = new Dog("rex");
        dog.walk();
        Named named = dog;
        named.label();
        Dog.Tracker tracker = new Dog.Tracker();
        tracker.record(dog);
        Shift shift = new Shift("ann", 8);
        shift.minutes();
        animals.put(dog.name(), dog);
        animals.get("rex").describe();
        new Thread(() -> close()).start();
    }

    void close() {
        StringBuilder sb = new StringBuilder();
        sb.append("closed");
    }
}
