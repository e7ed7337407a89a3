package zoo;

public abstract class Animal implements Named {
    protected String name;

    protected Animal(String name) {
        this.name = name;
    }

    public String name() {
        return name;
    }

    public String describe() {
        return name() + " says " + sound();
    }

    abstract String sound();

    void feed(int grams) {
        log("fed " + grams);
    }

    void feed(int grams, String food) {
        feed(grams);
    }

    static void log(String line) {
        System.err.println(line);
    }
}
