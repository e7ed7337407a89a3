package zoo;

public interface Named {
    String name();

    default String label() {
        return "<" + name() + ">";
    }
}
