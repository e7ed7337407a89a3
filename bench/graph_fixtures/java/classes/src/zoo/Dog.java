package zoo;

import java.util.ArrayList;
import java.util.List;

public class Dog extends Animal {
    private final List<Dog> pack = new ArrayList<>();
    private Tracker tracker = new Tracker();

    public Dog(String name) {
        super(name);
    }

    @Override
    String sound() {
        return "woof";
    }

    @Override
    public String describe() {
        return super.describe() + label();
    }

    void walk() {
        feed(10, "bones");
        this.feed(5);
        tracker.record(this);
        pack.forEach(d -> d.sound());
        Runnable r = new Runnable() {
            public void run() {
                System.out.println("anon");
            }
        };
        r.run();
    }

    static class Tracker {
        int steps;

        void record(Animal a) {
            steps++;
            Animal.log(a.name());
            a.describe();
        }
    }
}
