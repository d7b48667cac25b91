package dev.ripcord.engine.kernel;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The native decode kernels ({@code src/main/c}), called through FFM: one call computes one work item, a range of
 * weight rows against one quantized activation row, on the caller's thread; the Java side owns the threads,
 * the memory and the cancellation checks between items. The calls are critical downcalls (no safepoint inside,
 * heap segments allowed): they hold no lock, allocate nothing and run for microseconds.
 *
 * <p>One library holds every {@link Isa variant}; which ones the CPU runs comes from {@code cpuid} when the
 * library loads, and an instance binds one of them: the best by default, or a forced one for tests and
 * comparisons. Every variant computes {@link QuantRows}' definition, bit-identical to {@link NativeTwin}.
 */
public final class NativeKernels implements QuantRows {

    /** The variants, in the library's numbering; later is faster where the CPU runs it. */
    public enum Isa {
        GENERIC, AVX2, AVXVNNI, AVX512VNNI;

        /** {@code avx512vnni}, {@code avxvnni}, {@code avx2} or {@code generic}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Parses {@link #label()}, case-insensitively. */
        public static Isa of(String label) {
            for (Isa isa : values()) {
                if (isa.label().equalsIgnoreCase(label.trim())) {
                    return isa;
                }
            }
            throw new IllegalArgumentException("native ISA must be one of generic, avx2, avxvnni, avx512vnni, got '"
                    + label + "'");
        }
    }

    /** Why the library did not load, or null when it did. */
    private static final String UNAVAILABLE;
    private static final MethodHandle MATVEC;
    private static final int MASK;

    static {
        String why = null;
        MethodHandle matvec = null;
        int mask = 0;
        try {
            NativeLibrary.Packaged lib = NativeLibrary.packaged();
            if (lib == null) {
                why = NativeLibrary.platform() == null
                        ? "no native kernels for " + System.getProperty("os.name") + "/" + System.getProperty("os.arch")
                        : "this build has no native kernels (built without a C compiler or with ripcord.native.skip)";
            } else {
                Path file = NativeLibrary.extract(lib, NativeLibrary.defaultDirectory());
                SymbolLookup symbols = NativeLibrary.load(file);
                Linker linker = Linker.nativeLinker();
                MethodHandle isaMask = linker.downcallHandle(symbols.findOrThrow("ripcord_isa_mask"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT));
                mask = (int) isaMask.invokeExact();
                matvec = linker.downcallHandle(symbols.findOrThrow("ripcord_matvec"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS, ValueLayout.ADDRESS),
                        Linker.Option.critical(true));
            }
        } catch (Throwable e) {
            why = "native kernels not loaded: " + e;
        }
        UNAVAILABLE = matvec == null && why == null ? "native kernels not loaded" : why;
        MATVEC = matvec;
        MASK = mask;
    }

    private final Isa isa;

    private NativeKernels(Isa isa) {
        this.isa = isa;
    }

    /** Whether the library loaded in this process. */
    public static boolean available() {
        return MATVEC != null;
    }

    /** Why the library is not {@link #available()}, or null. */
    public static String unavailableReason() {
        return UNAVAILABLE;
    }

    /** The variants this CPU runs (empty if the library did not load), slowest first. */
    public static List<Isa> supported() {
        List<Isa> out = new ArrayList<>();
        for (Isa isa : Isa.values()) {
            if ((MASK & (1 << isa.ordinal())) != 0) {
                out.add(isa);
            }
        }
        return out;
    }

    /** The best variant this CPU runs. */
    public static NativeKernels best() {
        List<Isa> s = supported();
        if (s.isEmpty()) {
            throw new IllegalStateException(UNAVAILABLE);
        }
        return new NativeKernels(s.getLast());
    }

    /**
     * Variant {@code isa}.
     *
     * @throws IllegalStateException if the library did not load or this CPU cannot run {@code isa}
     */
    public static NativeKernels of(Isa isa) {
        if (!available()) {
            throw new IllegalStateException(UNAVAILABLE);
        }
        if (!supported().contains(isa)) {
            throw new IllegalStateException("this CPU cannot run the " + isa.label() + " native kernels; it runs "
                    + supported());
        }
        return new NativeKernels(isa);
    }

    public Isa isa() {
        return isa;
    }

    @Override
    public String name() {
        return "native-" + isa.label();
    }

    @Override
    public void rows(GgmlType type, MemorySegment w, long wOff, long rowStride, int rows, int k, MemorySegment qa,
                     long qaOff, MemorySegment out, long outOff) {
        Q8Activations.requireSupported(type, k);
        if (rows <= 0) {
            return;
        }
        long rowBytes = type.byteSize(k);
        if (rowStride < rowBytes) {
            throw new IllegalArgumentException("row stride " + rowStride + " is shorter than a row, " + rowBytes);
        }
        // Slices bound every byte the C function reads or writes: it trusts its arguments.
        MemorySegment weights = w.asSlice(wOff, rowStride * (rows - 1) + rowBytes);
        MemorySegment acts = qa.asSlice(qaOff, Q8Activations.byteRowBytes(k));
        MemorySegment results = out.asSlice(outOff << 2, 4L * rows);
        int rc;
        try {
            rc = (int) MATVEC.invokeExact(isa.ordinal(), type.id(), weights, rowStride, rows, k, acts, results);
        } catch (Throwable t) {
            throw new IllegalStateException("native kernel call failed", t);
        }
        if (rc != 0) {
            throw new IllegalArgumentException("the native kernels refused " + type + " rows of " + k);
        }
    }
}
