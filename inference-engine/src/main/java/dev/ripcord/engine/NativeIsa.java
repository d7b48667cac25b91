package dev.ripcord.engine;

/**
 * Which variant of the native kernels an engine binds ({@link KernelMode#NATIVE}). Every variant gives the same
 * bits; forcing one is for tests and for comparing their speed.
 */
public enum NativeIsa {
    /** The fastest variant this CPU runs (the default). */
    AUTO,
    /** Plain C. */
    GENERIC,
    /** AVX2 ({@code vpmaddubsw}). */
    AVX2,
    /** AVX-VNNI ({@code vpdpbusd} on 256 bits without AVX-512). */
    AVXVNNI,
    /** AVX-512 VNNI ({@code vpdpbusd}). */
    AVX512VNNI
}
