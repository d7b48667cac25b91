package dev.ripcord.stack;

/** Placeholder; replaced by the launcher. */
public final class LocalStack {
    public static void main(String[] args) {
    }
}
